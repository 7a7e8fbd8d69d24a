"""What an older pyspark lacks, said in one line that names the release that has it.

The workbench accepts pyspark 4.0 to 4.3 (``noxfile.py`` tests each). Some APIs a user's
cell calls arrived later than 4.0; on an older pyspark the cell fails with a bare
``AttributeError`` ("'GroupedData' object has no attribute 'transformWithState'").
:func:`missing_feature` turns such an error into a line that says which release added the
API and which one is running, so the fix (a newer pyspark, or the older flavour) is plain.
"""

from __future__ import annotations

import re

import pyspark

__all__ = ["ADDED_IN", "missing_feature"]

#: APIs newer than pyspark 4.0: (attribute, Spark Connect only) -> (what it is, first release).
ADDED_IN: dict[tuple[str, bool], tuple[str, str]] = {
    ("transformWithState", False): ("GroupedData.transformWithState (transformWithState on Rows)", "4.1"),
    ("transformWithState", True): ("GroupedData.transformWithState (transformWithState on Rows)", "4.1"),
    ("transformWithStateInPandas", True): ("transformWithStateInPandas over Spark Connect", "4.1"),
}

_NO_ATTRIBUTE = re.compile(r"object has no attribute '(\w+)'")


def _release(version: str) -> tuple[int, int]:
    major, minor = (re.findall(r"\d+", version) + ["0", "0"])[:2]
    return int(major), int(minor)


def missing_feature(exc: BaseException, version: str = pyspark.__version__) -> str | None:
    """One line naming the pyspark release that added what ``exc`` found missing, or None.

    Examples
    --------
    >>> exc = AttributeError("'GroupedData' object has no attribute 'transformWithState'")
    >>> print(missing_feature(exc, "4.0.5"))
    GroupedData.transformWithState (transformWithState on Rows) needs pyspark 4.1 or later; this is pyspark 4.0.5
    >>> missing_feature(exc, "4.1.4") is None     # there, the error is the user's own
    True
    >>> missing_feature(ValueError("no"), "4.0.5") is None
    True
    """
    if not isinstance(exc, AttributeError):
        return None
    name = getattr(exc, "name", None)
    if name is None:
        found = _NO_ATTRIBUTE.search(str(exc))
        name = found.group(1) if found else None
    owner = getattr(exc, "obj", None)
    over_connect = owner is not None and ".connect." in f"{type(owner).__module__}."
    known = ADDED_IN.get((name, over_connect)) if name else None
    if known is None or _release(version) >= _release(known[1]):
        return None
    what, release = known
    return f"{what} needs pyspark {release} or later; this is pyspark {version}"
