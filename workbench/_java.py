"""Finding the Java that Spark will run, and saying clearly when there is none.

Spark 4 runs on Java 17 or 21. Its launcher uses ``$JAVA_HOME/bin/java`` when ``JAVA_HOME``
is set and ``java`` on ``PATH`` otherwise; :func:`find_java` follows the same order so that
what it reports is what Spark would start. An older Java is refused; a newer one (or 18-20)
gets a warning (:func:`java_warning`), since Spark 4 supports only 17 and 21 but a user may
know better. This module is used by the command line before
anything else is imported, so it must stay free of pyspark (and of the rest of the package).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Mapping

__all__ = ["MIN_JAVA", "SUPPORTED_JAVA", "JavaInfo", "find_java", "parse_java_version", "require_java",
           "java_warning", "doctor_lines"]

#: The oldest Java major version Spark 4 runs on.
MIN_JAVA = 17
#: The Java major versions Spark 4 supports (what its documentation and its launcher name).
SUPPORTED_JAVA = (17, 21)

_INSTALL_HINT = (
    "Install it (Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless; "
    "macOS: brew install openjdk@17; conda: conda install -c conda-forge openjdk=17) "
    "or set JAVA_HOME."
)

# `java -version` writes e.g. `openjdk version "17.0.15" 2025-04-15`, `openjdk version "21"`,
# `openjdk version "25-ea"` or, before Java 9, `java version "1.8.0_392"`.
_VERSION_RE = re.compile(r'version "(?P<version>[^"]+)"')


@dataclass(frozen=True)
class JavaInfo:
    """A Java executable and the version it reports.

    Attributes
    ----------
    path : str
        The executable that was run.
    version : str or None
        The version as ``java -version`` prints it (``"17.0.15"``, ``"1.8.0_392"``), or None
        when its output could not be read.
    major : int or None
        The major version (17, 21, 8 for ``1.8``), or None when unknown.
    source : str
        Where it was found: ``"JAVA_HOME"`` or ``"PATH"``.

    Examples
    --------
    >>> info = JavaInfo("/usr/bin/java", "17.0.15", 17, "PATH")
    >>> info.supported
    True
    """

    path: str
    version: str | None
    major: int | None
    source: str

    @property
    def supported(self) -> bool:
        """Whether Spark 4 may run on this Java (17 or newer; see :func:`java_warning` for 18-20 and 22 on)."""
        return self.major is not None and self.major >= MIN_JAVA


def java_warning(info: JavaInfo) -> str | None:
    """A warning for a Java that Spark 4 may run on but does not support (18-20, 22 and newer), else None.

    Parameters
    ----------
    info : JavaInfo
        The Java found (:func:`find_java`).

    Returns
    -------
    str or None

    Examples
    --------
    >>> java_warning(JavaInfo("/usr/bin/java", "25.0.1", 25, "PATH"))
    'Java 25: Spark 4 supports 17 and 21'
    >>> java_warning(JavaInfo("/usr/bin/java", "21.0.2", 21, "PATH")) is None
    True
    """
    if not info.supported or info.major in SUPPORTED_JAVA:
        return None
    return f"Java {info.major}: Spark 4 supports {' and '.join(map(str, SUPPORTED_JAVA))}"


def parse_java_version(output: str) -> tuple[str, int] | None:
    """Read the version and major version from the output of ``java -version``.

    Parameters
    ----------
    output : str
        What ``java -version`` printed (it prints to standard error).

    Returns
    -------
    tuple of (str, int) or None
        The version string and its major number, or None if no version is found.

    Examples
    --------
    >>> parse_java_version('openjdk version "17.0.15" 2025-04-15')
    ('17.0.15', 17)
    >>> parse_java_version('java version "1.8.0_392"')
    ('1.8.0_392', 8)
    >>> parse_java_version("command not found") is None
    True
    """
    found = _VERSION_RE.search(output)
    if not found:
        return None
    version = found.group("version")
    # Before Java 9 the scheme was 1.<major>.0_<update>.
    digits = re.match(r"1\.(\d+)", version) or re.match(r"(\d+)", version)
    if not digits:
        return None
    return version, int(digits.group(1))


def _java_candidate(environ: Mapping[str, str]) -> tuple[str, str] | None:
    java_home = environ.get("JAVA_HOME")
    if java_home:
        return os.path.join(java_home, "bin", "java"), "JAVA_HOME"
    on_path = shutil.which("java", path=environ.get("PATH", os.defpath))
    return (on_path, "PATH") if on_path else None


def find_java(environ: Mapping[str, str] | None = None) -> JavaInfo | None:
    """The Java that Spark would start, with the version it reports.

    Looks at ``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is set, else ``java`` on ``PATH``,
    and runs ``java -version``. The result may be too old; check :attr:`JavaInfo.supported`
    or use :func:`require_java`.

    Parameters
    ----------
    environ : mapping, optional
        Environment to read ``JAVA_HOME`` and ``PATH`` from; ``os.environ`` by default.

    Returns
    -------
    JavaInfo or None
        None when there is no Java executable to run.

    Examples
    --------
    >>> info = find_java()                 # doctest: +SKIP
    >>> info.major, info.path              # doctest: +SKIP
    (17, '/usr/bin/java')
    """
    environ = os.environ if environ is None else environ
    candidate = _java_candidate(environ)
    if candidate is None:
        return None
    path, source = candidate
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return None
    try:
        done = subprocess.run(
            [path, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return JavaInfo(path, None, None, source)
    parsed = parse_java_version(done.stderr + "\n" + done.stdout)
    if parsed is None:
        return JavaInfo(path, None, None, source)
    return JavaInfo(path, parsed[0], parsed[1], source)


def require_java(environ: Mapping[str, str] | None = None) -> JavaInfo:
    """The Java that Spark would start, or a one-line :class:`RuntimeError` saying what to do.

    Parameters
    ----------
    environ : mapping, optional
        Environment to read ``JAVA_HOME`` and ``PATH`` from; ``os.environ`` by default.

    Returns
    -------
    JavaInfo
        A Java that Spark 4 runs on (17 or newer).

    Raises
    ------
    RuntimeError
        When there is no Java, or it is older than 17. The message is one line naming what
        was found and how to install a suitable Java.

    Examples
    --------
    >>> require_java().major >= 17         # doctest: +SKIP
    True
    """
    environ = os.environ if environ is None else environ
    info = find_java(environ)
    if info is None:
        java_home = environ.get("JAVA_HOME")
        if java_home:
            raise RuntimeError(
                f"workbench: JAVA_HOME is set to {java_home} but it has no bin/java; "
                f"point JAVA_HOME at a Java 17 or 21 (Spark 4 needs one) or unset it. "
                f"{_INSTALL_HINT}"
            )
        raise RuntimeError(f"workbench: no Java 17 or 21 found (Spark 4 needs one). {_INSTALL_HINT}")
    if info.version is None:
        raise RuntimeError(
            f"workbench: could not read the version of {info.path} (from {info.source}); "
            f"Spark 4 needs Java 17 or 21. {_INSTALL_HINT}"
        )
    if not info.supported:
        raise RuntimeError(
            f"workbench: found Java {info.version} at {info.path} (from {info.source}), "
            f"but Spark 4 needs Java 17 or 21. {_INSTALL_HINT}"
        )
    return info


def doctor_lines(environ: Mapping[str, str]) -> tuple[list[str], JavaInfo | None, bool]:
    """``workbench doctor``'s line for Java (and a warning line for a Java Spark 4 does not support).

    Parameters
    ----------
    environ : mapping
        Environment to read ``JAVA_HOME`` and ``PATH`` from.

    Returns
    -------
    tuple of (list of str, JavaInfo or None, bool)
        The lines, the Java found, and whether Spark can start on it.

    Examples
    --------
    >>> doctor_lines({"PATH": "/nonexistent"})
    (['java        not found (Spark 4 needs Java 17 or 21)'], None, False)
    """
    java = find_java(environ)
    if java is None:
        where = f"nothing at JAVA_HOME={environ['JAVA_HOME']}" if environ.get("JAVA_HOME") else "not found"
        return [f"{'java':<11} {where} (Spark 4 needs Java 17 or 21)"], None, False
    if not java.supported:
        return [f"{'java':<11} {java.version or 'unknown version'} ({java.path}, from {java.source}) "
                "- Spark 4 needs Java 17 or 21"], java, False
    lines = [f"{'java':<11} {java.version} ({java.path}, from {java.source})"]
    warning = java_warning(java)
    if warning:
        lines.append(f"{'warning':<11} {warning}; if Spark fails to start, point JAVA_HOME at one of those")
    return lines, java, True
