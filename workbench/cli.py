"""The ``workbench`` command: start JupyterLab, run the test suite, check the set-up.

``workbench lab`` and ``workbench test`` check for a Java that Spark 4 runs on before doing
anything else, so a missing Java is one clear line instead of a JVM stack trace later. This
module imports neither pyspark nor the rest of the package, so the command answers at once.
``python -m workbench ...`` is the same command.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import time
import sys
from importlib import metadata
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ._java import JavaInfo, find_java, require_java
from ._spark_target import SparkURLError, spark_target, unreachable

__all__ = ["CliError", "main", "lab_command", "pytest_command", "find_chromium", "ensure_chromium"]

PACKAGE_DIR = Path(__file__).resolve().parent
#: The folder holding the package: the repository root in a source checkout.
SOURCE_ROOT = PACKAGE_DIR.parent

_CHROMIUM_HINT = "install it (sudo apt-get install chromium) or set WORKBENCH_CHROMIUM=/path/to/chromium"


class CliError(Exception):
    """A problem the user can fix; :func:`main` prints its one-line message and exits with 2."""


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def notebooks_dir(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The folder JupyterLab opens: ``notebooks/`` of a source checkout, else ``cwd``.

    Examples
    --------
    >>> notebooks_dir("/tmp").is_dir()
    True
    """
    candidate = SOURCE_ROOT / "notebooks"
    if candidate.is_dir():
        return candidate
    return Path(os.getcwd() if cwd is None else cwd)


def lab_command(extra: Sequence[str], *, root_dir: Path, as_root: bool) -> list[str]:
    """The ``jupyter lab`` command line ``workbench lab`` runs.

    JupyterLab listens on 127.0.0.1 only and keeps token authentication on (the URL with
    the token is printed at start-up). Arguments in ``extra`` come last, so they win.

    Parameters
    ----------
    extra : sequence of str
        Further arguments for ``jupyter lab``.
    root_dir : Path
        The folder JupyterLab opens.
    as_root : bool
        Add ``--allow-root``, which JupyterLab requires when run by root.

    Returns
    -------
    list of str

    Examples
    --------
    >>> lab_command(["--port=9000"], root_dir=Path("/nb"), as_root=False)[2:]
    ['jupyter', 'lab', '--ServerApp.ip=127.0.0.1', '--ServerApp.root_dir=/nb', '--port=9000']
    """
    command = [
        sys.executable, "-m", "jupyter", "lab",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={root_dir}",
    ]
    if as_root:
        command.append("--allow-root")
    return [*command, *extra]


#: What ``workbench test --quick`` selects: the pure, magic and core Spark tests in
#: ``tests/`` (one shared local Spark), without notebooks, browsers, clusters, or kernels and
#: processes that start a Spark of their own.
QUICK_ARGS = ("-m", "not browser and not cluster and not kernel", "tests")
#: How ``workbench test`` spreads the suite over pytest-xdist workers: each file (and each
#: notebook) stays on one worker, in order, and the groups go out in the order the suite
#: lists them, the long ones first (see tests/suite.py).
WORKERS = 2
_PARALLEL = ("--dist", "loadgroup", "--no-loadscope-reorder")


def _chooses_workers(extra: Sequence[str]) -> bool:
    """Whether the pytest arguments already say how to run in parallel (or not at all)."""
    return any(
        arg in ("-n", "--numprocesses", "no:xdist") or arg.startswith(("-n", "--numprocesses=", "--dist"))
        for arg in extra
    )


def pytest_command(extra: Sequence[str], *, quick: bool = False) -> list[str]:
    """The pytest command line ``workbench test`` runs (from the repository root).

    The suite runs on :data:`WORKERS` pytest-xdist workers, each file on one worker,
    unless ``extra`` chooses (``-n 0`` runs in this process). ``quick`` selects the
    everyday tier (:data:`QUICK_ARGS`); a ``-m`` in ``extra`` comes after it and wins.

    Examples
    --------
    >>> pytest_command(["-x"])[1:]
    ['-m', 'pytest', '-n', '2', '--dist', 'loadgroup', '--no-loadscope-reorder', '-x']
    >>> pytest_command(["-n", "0", "tests/test_cli.py"])[1:]
    ['-m', 'pytest', '-n', '0', 'tests/test_cli.py']
    >>> pytest_command([], quick=True)[3:]
    ['-n', '2', '--dist', 'loadgroup', '--no-loadscope-reorder', '-m', 'not browser and not cluster and not kernel', 'tests']
    """
    workers = [] if _chooses_workers(extra) else ["-n", str(WORKERS), *_PARALLEL]
    return [sys.executable, "-m", "pytest", *workers, *(QUICK_ARGS if quick else ()), *extra]


def find_chromium(environ: Mapping[str, str] | None = None) -> str | None:
    """The Chromium the browser tests use, or None.

    ``WORKBENCH_CHROMIUM`` wins when set (and is None if it is not an executable file);
    otherwise ``/usr/bin/chromium`` or ``chromium`` on ``PATH``.

    Examples
    --------
    >>> find_chromium({"WORKBENCH_CHROMIUM": "/nonexistent/chromium"}) is None
    True
    """
    environ = os.environ if environ is None else environ
    configured = environ.get("WORKBENCH_CHROMIUM")
    if configured:
        return configured if _is_executable(configured) else None
    if _is_executable("/usr/bin/chromium"):
        return "/usr/bin/chromium"
    return shutil.which("chromium", path=environ.get("PATH", os.defpath))


def ensure_chromium(
    environ: Mapping[str, str] | None = None,
    *,
    as_root: bool | None = None,
    apt_get: str | None = None,
    run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
) -> str:
    """Return the Chromium for the browser tests, installing it with apt-get when root.

    Parameters
    ----------
    environ : mapping, optional
        Environment to read ``WORKBENCH_CHROMIUM`` and ``PATH`` from; ``os.environ`` by default.
    as_root : bool, optional
        Whether this process may install packages; detected when left out.
    apt_get : str, optional
        Path of ``apt-get``; looked up on ``PATH`` when left out.
    run : callable
        Runs the apt-get commands (``subprocess.run``; replaced in tests).

    Returns
    -------
    str
        Path of the Chromium executable.

    Raises
    ------
    CliError
        When ``WORKBENCH_CHROMIUM`` is not executable, or Chromium is missing and cannot be
        installed here; one line saying how to fix it.

    Examples
    --------
    >>> ensure_chromium()                  # doctest: +SKIP
    '/usr/bin/chromium'
    """
    environ = os.environ if environ is None else environ
    configured = environ.get("WORKBENCH_CHROMIUM")
    if configured and not _is_executable(configured):
        raise CliError(
            f"workbench: WORKBENCH_CHROMIUM is set to {configured}, which is not an executable "
            "file; point it at a Chromium binary or unset it."
        )
    found = find_chromium(environ)
    if found:
        return found
    as_root = _is_root() if as_root is None else as_root
    apt_get = apt_get or shutil.which("apt-get", path=environ.get("PATH", os.defpath))
    if not (as_root and apt_get):
        raise CliError(f"workbench: the browser tests need Chromium, which was not found; {_CHROMIUM_HINT}.")
    print("workbench: Chromium (for the browser tests) is missing; installing it with apt-get install chromium", flush=True)
    apt_env = {**environ, "DEBIAN_FRONTEND": "noninteractive"}
    for step in ([apt_get, "update", "-qq"], [apt_get, "install", "-y", "-qq", "chromium"]):
        done = run(step, env=apt_env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.stderr.write(done.stderr or "")
            raise CliError(f"workbench: `{' '.join(step)}` failed (exit {done.returncode}); {_CHROMIUM_HINT}.")
    found = find_chromium(environ)
    if not found:
        raise CliError(f"workbench: apt-get installed chromium but no chromium executable was found; {_CHROMIUM_HINT}.")
    return found


def _java_or_fail() -> JavaInfo:
    try:
        return require_java()
    except RuntimeError as error:
        raise CliError(str(error)) from None


def cmd_lab(extra: Sequence[str]) -> int:
    """``workbench lab``: check Java, then replace this process with ``jupyter lab``."""
    java = _java_or_fail()
    command = lab_command(extra, root_dir=notebooks_dir(), as_root=_is_root())
    from ._class_archive import current_archive, record_in_background

    # While JupyterLab starts and the user picks a notebook: the first session then maps it too.
    archive = current_archive(java)
    if archive is not None and not (os.environ.get("WORKBENCH_MASTER") or os.environ.get("SPARK_REMOTE")):
        record_in_background(archive, {})  # only the embedded local Spark maps it
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name != "posix":  # pragma: no cover
        return subprocess.run(command, check=False).returncode
    # Replace this process, so Ctrl-C and signals reach JupyterLab directly.
    os.execv(command[0], command)
    return 0  # pragma: no cover (execv does not return)


def cmd_test(extra: Sequence[str], *, quick: bool = False) -> int:
    """``workbench test``: check Java and Chromium, then run pytest from the repository root.

    ``quick`` runs the everyday tier, which needs no Chromium.
    """
    if not (SOURCE_ROOT / "pyproject.toml").is_file() or not (SOURCE_ROOT / "tests").is_dir():
        raise CliError(
            f"workbench: no test suite next to {PACKAGE_DIR}; run `workbench test` from a source "
            "checkout installed with pip install -e '.[test]'."
        )
    java = _java_or_fail()
    env = dict(os.environ) if quick else {**os.environ, "WORKBENCH_CHROMIUM": ensure_chromium()}
    command = pytest_command(extra, quick=quick)
    if not quick and not _names_tests(extra):
        class_archive_first(java)
    return subprocess.run(command, cwd=SOURCE_ROOT, env=env, check=False).returncode


def _names_tests(extra: Sequence[str]) -> bool:
    """Whether pytest's arguments name files or tests (else the run selects from the whole suite).

    >>> _names_tests(["-m", "not browser"]), _names_tests(["tests/test_cli.py::test_doctor_prints_one_line_each"])
    (False, True)
    """
    return any(not arg.startswith("-") and (SOURCE_ROOT / arg.split("::")[0]).exists() for arg in extra)


def class_archive_first(java: JavaInfo | None = None) -> None:
    """Make the class data archive before a suite-wide run's JVMs start, if it is missing.

    ``java`` is the Java found already; found here (or a one-line error) when None. The
    version matrix's sessions (``noxfile.py``) call it for their own virtualenvs.

    Every local session's JVM maps it (``workbench/_class_archive.py``), about 1.5 s sooner
    each: the suite's ~60 JVMs gain from the first, and no test meets the background
    process that a first session would start to make it. Once per Java and pyspark; a run of
    a few named tests skips it (the archive costs about 25 s to make).
    """
    from ._class_archive import current_archive, enabled, ensure, status

    if java is None:
        java = _java_or_fail()
    archive = current_archive(java)
    if archive is None or archive.exists() or not enabled():
        return
    started = time.monotonic()
    print("workbench: making the class data archive local Spark JVMs start with (once) ...", flush=True)
    made = ensure(java)
    print(f"workbench: {'made' if made else 'not made'} in {time.monotonic() - started:.0f} s: {status(archive)}",
          flush=True)


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def doctor_lines(environ: Mapping[str, str] | None = None) -> tuple[list[str], bool]:
    """The lines ``workbench doctor`` prints, and whether ``workbench lab`` can start.

    Examples
    --------
    >>> lines, ok = doctor_lines()         # doctest: +SKIP
    >>> lines[0]                           # doctest: +SKIP
    'python      3.11.7 (/home/me/workbench/.venv/bin/python)'
    """
    environ = os.environ if environ is None else environ
    ok = True
    python = ".".join(str(part) for part in sys.version_info[:3])
    lines = [f"{'python':<11} {python} ({sys.executable})"]

    java = find_java(environ)
    if java is None:
        ok = False
        where = f"nothing at JAVA_HOME={environ['JAVA_HOME']}" if environ.get("JAVA_HOME") else "not found"
        lines.append(f"{'java':<11} {where} (Spark 4 needs Java 17 or 21)")
    elif not java.supported:
        ok = False
        lines.append(
            f"{'java':<11} {java.version or 'unknown version'} ({java.path}, from {java.source}) "
            "- Spark 4 needs Java 17 or 21"
        )
    else:
        lines.append(f"{'java':<11} {java.version} ({java.path}, from {java.source})")

    for package in ("pyspark", "jupyterlab"):
        version = _package_version(package)
        ok = ok and version is not None
        lines.append(f"{package:<11} {version or 'not installed'}")

    spark_line, spark_ok = _spark_line(environ)
    ok = ok and spark_ok
    lines.append(f"{'spark':<11} {spark_line}")

    from ._labext import doctor_line, labextension_status

    # The JupyterLab extension holds the Streams panel and the Spark UI tab (charts draw without it too).
    extension = labextension_status()
    ok = ok and extension.enabled
    lines.append(doctor_line(extension))

    from ._class_archive import current_archive, status

    # Local sessions start their JVM ~1.5 s sooner with it (made once per Java and pyspark).
    archive = current_archive(java) if java is not None else None
    if archive is not None:
        lines.append(f"{'classes':<11} {status(archive)}")

    chromium = find_chromium(environ)
    if chromium:
        lines.append(f"{'chromium':<11} {chromium}")
    elif environ.get("WORKBENCH_CHROMIUM"):
        lines.append(f"{'chromium':<11} WORKBENCH_CHROMIUM={environ['WORKBENCH_CHROMIUM']} is not executable")
    else:
        lines.append(f"{'chromium':<11} not found (only the browser tests need it; {_CHROMIUM_HINT})")
    return lines, ok


def _spark_line(environ: Mapping[str, str]) -> tuple[str, bool]:
    """Which Spark a session would use and whether it answers (a TCP check, no JVM)."""
    try:
        target = spark_target(environ)
    except SparkURLError as error:
        return f"{error}", False
    if not target.endpoints:
        note = "" if target.kind == "embedded" else ": not checked (the URL names no address to try)"
        return target.describe() + note, True
    reason = unreachable(target, timeout=3.0)
    if reason is None:
        return f"{target.describe()}: reachable", True
    return f"{target.describe()}: cannot reach {target.url}: {reason}", False


def cmd_doctor(extra: Sequence[str]) -> int:
    """``workbench doctor``: one line each for Python, Java, pyspark, JupyterLab, Spark, Chromium."""
    lines, ok = doctor_lines()
    print("\n".join(lines))
    return 0 if ok else 1


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``workbench`` command."""
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Spark Streaming Workbench: a JupyterLab workbench for Spark Structured Streaming.",
        epilog="Spark 4 needs Java 17 or 21: set JAVA_HOME, or put java on PATH.",
        allow_abbrev=False,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    lab = commands.add_parser(
        "lab",
        usage="workbench lab [-h] [JUPYTER_LAB_ARGS ...]",
        help="start JupyterLab on 127.0.0.1 in the notebooks folder",
        description=(
            "Check Java, then start JupyterLab (from this environment) on 127.0.0.1 with token "
            "authentication, opening the notebooks/ folder of the checkout (else the current "
            "folder). Open the printed URL, which carries the token. Other arguments go to "
            "jupyter lab, e.g. workbench lab --port=8899 --no-browser."
        ),
        allow_abbrev=False,
    )
    lab.set_defaults(handler=cmd_lab)
    test = commands.add_parser(
        "test",
        usage="workbench test [-h] [--quick] [PYTEST_ARGS ...]",
        help="run the test suite with pytest",
        description=(
            "Check Java and Chromium (installing Chromium with apt-get when run as root; else set "
            "WORKBENCH_CHROMIUM), then run pytest from the repository root and exit with its "
            "status. The suite runs on two pytest-xdist workers (-n 0 runs it in one process). "
            "Other arguments go to pytest, e.g. workbench test -m 'not browser' or "
            "workbench test tests/test_cli.py -x; put them after -- to pass -h to pytest."
        ),
        allow_abbrev=False,
    )
    test.add_argument(
        "--quick", action="store_true",
        help="the everyday tier: pure, magic and core Spark tests (no notebooks, browser, cluster or kernels)",
    )
    test.set_defaults(handler=cmd_test)
    doctor = commands.add_parser(
        "doctor",
        help="print the Python, Java, pyspark, JupyterLab, Spark and Chromium in use",
        description=(
            "Print one line each for Python, Java, pyspark, JupyterLab, the Spark sessions would use "
            "(embedded, the cluster of WORKBENCH_MASTER or the Spark Connect server of SPARK_REMOTE, "
            "with a quick check that it answers) and Chromium. Exits with 1 when workbench lab could "
            "not start (no suitable Java, or a package missing) or that Spark is malformed or unreachable."
        ),
        allow_abbrev=False,
    )
    doctor.set_defaults(handler=cmd_doctor, takes_extra=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``workbench`` command and return its exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        0 on success, 2 for a problem the user must fix (printed as one line on stderr),
        otherwise the exit status of pytest or JupyterLab.

    Examples
    --------
    >>> main(["doctor"])                   # doctest: +SKIP
    0
    """
    parser = build_parser()
    args, extra = parser.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    if extra[:1] == ["--"]:
        extra = extra[1:]
    if extra and not getattr(args, "takes_extra", True):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    options = {"quick": True} if getattr(args, "quick", False) else {}
    try:
        return args.handler(extra, **options)
    except CliError as error:
        print(error, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
