"""Public names of a package that live in submodules, imported on first use (PEP 562)."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_attributes(package: str, names: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``names[name] = (module, attribute)`` when first asked.

    So ``import package`` stays fast and free of what the names need (pyspark, pytest).

    Examples
    --------
    >>> getter = lazy_attributes("demo", {"dedent": ("textwrap", "dedent")})
    >>> getter("dedent")("  x")
    'x'
    >>> getter("nothing")
    Traceback (most recent call last):
    AttributeError: module 'demo' has no attribute 'nothing'
    """

    def __getattr__(name: str) -> Any:
        if name in names:
            module, attribute = names[name]
            return getattr(importlib.import_module(module), attribute)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
