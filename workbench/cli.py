"""The ``workbench`` command: start JupyterLab, run the test suite, check the set-up.

``workbench lab`` and ``workbench test`` check for a Java that Spark 4 runs on before doing
anything else, so a missing Java is one clear line instead of a JVM stack trace later. This
module imports neither pyspark nor the rest of the package, so the command answers at once.
``python -m workbench ...`` is the same command.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import time
import sys
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Mapping, Sequence

from ._chromium import CHROMIUM_HINT, ChromiumMissing, ensure_chromium, find_chromium, is_root
from ._java import JavaInfo, doctor_lines as java_doctor_lines, java_warning, require_java
from ._lab_settings import ROOT_DIR_SETTINGS, configured_settings, lab_arguments
from ._spark_target import (SPARK_CHOICE_VARIABLES, doctor_line as spark_doctor_line, is_loopback,
                            spark_home_line)

__all__ = ["CliError", "main", "lab_command", "pytest_command", "find_chromium", "ensure_chromium"]

PACKAGE_DIR = Path(__file__).resolve().parent
#: The folder holding the package: the repository root in a source checkout.
SOURCE_ROOT = PACKAGE_DIR.parent

class CliError(Exception):
    """A problem the user can fix; :func:`main` prints its one-line message and exits with 2."""


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

    JupyterLab listens on 127.0.0.1 and opens ``root_dir``, with token authentication on (the
    URL with the token is printed at start-up). Jupyter takes one value of each setting, so a
    choice in ``extra`` replaces the default: an ``--ip`` or ``--ServerApp.ip`` (:func:`cmd_lab`
    refuses one that is not loopback), a root folder (``--notebook-dir``, ...) or a file or
    folder to open.

    Parameters
    ----------
    extra : sequence of str
        Further arguments for ``jupyter lab``.
    root_dir : Path
        The folder JupyterLab opens unless ``extra`` names one.
    as_root : bool
        Add ``--allow-root``, which JupyterLab requires when run by root.

    Returns
    -------
    list of str

    Examples
    --------
    >>> lab_command(["--port=9000"], root_dir=Path("/nb"), as_root=False)[2:]
    ['jupyter', 'lab', '--ServerApp.ip=127.0.0.1', '--ServerApp.root_dir=/nb', '--port=9000']
    >>> lab_command(["--ip", "::1", "--no-browser", "/tmp/other.ipynb"], root_dir=Path("/nb"), as_root=False)[2:]
    ['jupyter', 'lab', '--ip', '::1', '--no-browser', '/tmp/other.ipynb']
    """
    chosen = {name for name, _, _ in lab_arguments(extra)}
    command = [sys.executable, "-m", "jupyter", "lab"]
    if not chosen & {"ip", "ServerApp.ip"}:
        command.append("--ServerApp.ip=127.0.0.1")
    if not chosen & {None, *ROOT_DIR_SETTINGS}:
        command.append(f"--ServerApp.root_dir={root_dir}")
    if as_root:
        command.append("--allow-root")
    return [*command, *extra]


#: ``jupyter lab`` settings (``ip`` of ``--ServerApp.ip``) that undo ``workbench lab``'s defaults, and when.
_UNSAFE_LAB = {
    "ip": ("let other machines reach JupyterLab", lambda value: not is_loopback(value)),
    "token": ("turn off JupyterLab's token authentication", lambda value: not value),
    "disable_check_xsrf": ("turn off JupyterLab's cross-site request checks", lambda value: value.lower() != "false"),
    "allow_origin": ("let other web sites' pages use JupyterLab", bool),  # allow_origin_pat too
}
#: The settings with which JupyterLab asks for a password, which makes an empty token safe.
_PASSWORDS = ("ServerApp.password", "NotebookApp.password", "PasswordIdentityProvider.hashed_password")


def _first_unsafe(settings: Sequence[tuple[str | None, object, str]], password: bool) -> tuple[str, str] | None:
    """(as given, what it would do) for the first of ``settings`` ((name, value, as given)) that would undo
    ``workbench lab``'s safe defaults, or None; an empty token is safe with a ``password``."""
    for name, value, shown in settings:
        setting = name.rpartition(".")[2].removesuffix("_pat") if name else None
        reason, unsafe = _UNSAFE_LAB.get(setting, ("", None))
        text = value if isinstance(value, str) else str(value)
        if unsafe is not None and not (setting == "token" and password) and unsafe(text.strip("'\"")):
            return shown, reason
    return None


def _unsafe_lab_argument(extra: Sequence[str], *, password: bool = False) -> str | None:
    """One line refusing the first argument that would undo ``workbench lab``'s safe defaults, or None.

    >>> _unsafe_lab_argument(["--port=9000", "--ip=127.0.0.1", "--IdentityProvider.token=abc"]) is None
    True
    >>> _unsafe_lab_argument(["--ip", "0.0.0.0"])
    'workbench: --ip 0.0.0.0 would let other machines reach JupyterLab, which workbench lab does not do; if you really want that, run jupyter lab yourself: jupyter lab --ip 0.0.0.0'
    """
    arguments = lab_arguments(extra)
    password = password or any(name in _PASSWORDS and value for name, value, _ in arguments)
    if unsafe := _first_unsafe(arguments, password):
        return (f"workbench: {unsafe[0]} would {unsafe[1]}, which workbench lab does not do; if you really want "
                f"that, run jupyter lab yourself: jupyter lab {shlex.join(extra)}")
    return None


#: What Jupyter's config files may set that ``workbench lab`` keeps safe (its command line sets ``ip``).
_CONFIG_SETTINGS = (*(f"{app}.{key}" for app in ("ServerApp", "NotebookApp")
                      for key in ("token", "disable_check_xsrf", "allow_origin", "allow_origin_pat")),
                    "IdentityProvider.token", "PasswordIdentityProvider.token")


def _lab_refusal(extra: Sequence[str], config_paths: Sequence[str] | None = None) -> str | None:
    """One line refusing an argument (:func:`_unsafe_lab_argument`) or a setting of Jupyter's config files
    (on ``config_paths``, Jupyter's by default: see :func:`.configured_settings`) that would undo
    ``workbench lab``'s safe defaults, or None. A setting ``extra`` gives in the same spelling is its own.
    """
    arguments = lab_arguments(extra)
    config_file = next((value for name, value, _ in arguments if name in ("config", "JupyterApp.config_file")), None)
    found = configured_settings([*_CONFIG_SETTINGS, *_PASSWORDS], config_paths, config_file=config_file)
    password = any(found.get(name, ("",))[0] for name in _PASSWORDS)
    if refused := _unsafe_lab_argument(extra, password=password):
        return refused
    given = {name for name, _, _ in arguments}
    if any(name and name.endswith(".token") for name in given):  # one token, whichever spelling gives it
        given |= {name for name in _CONFIG_SETTINGS if name.endswith(".token")}
    settings = [(name, value, f"{name}={value!r} in {path}") for name, (value, path) in found.items()
                if name not in given]
    if unsafe := _first_unsafe(settings, password):
        return (f"workbench: {unsafe[0]} would {unsafe[1]}, which workbench lab does not do; remove it there, or "
                f"if you really want that, run jupyter lab yourself: jupyter lab {shlex.join(extra)}")
    return None


#: What ``workbench test --quick`` selects: the pure, magic and core Spark tests in
#: ``tests/`` (one shared local Spark), without notebooks, browsers, clusters, kernels and
#: processes that start a Spark of their own, or the ``slow`` tests (long Spark tests of cases
#: shorter ones cover too). ``tests`` only when no files or tests are named.
QUICK_ARGS = ("-m", "not browser and not cluster and not kernel and not slow")
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
    everyday tier (:data:`QUICK_ARGS`, in ``tests`` unless ``extra`` names files or tests); a
    ``-m`` in ``extra`` comes after it and wins.

    Examples
    --------
    >>> pytest_command(["-x"])[1:]
    ['-m', 'pytest', '-n', '2', '--dist', 'loadgroup', '--no-loadscope-reorder', '-x']
    >>> pytest_command(["-n", "0", "tests/test_cli.py"])[1:]
    ['-m', 'pytest', '-n', '0', 'tests/test_cli.py']
    >>> pytest_command([], quick=True)[3:]
    ['-n', '2', '--dist', 'loadgroup', '--no-loadscope-reorder', '-m', 'not browser and not cluster and not kernel and not slow', 'tests']
    >>> pytest_command(["-n0", "tests/test_cli.py"], quick=True)[3:]
    ['-m', 'not browser and not cluster and not kernel and not slow', '-n0', 'tests/test_cli.py']
    """
    workers = [] if _chooses_workers(extra) else ["-n", str(WORKERS), *_PARALLEL]
    tier = [*QUICK_ARGS, *([] if _named_paths(extra)[1] else ["tests"])] if quick else []
    return [sys.executable, "-m", "pytest", *workers, *tier, *extra]


#: pytest options whose value is the next argument (a file after ``--ignore`` is not one to run).
_VALUE_OPTIONS = {"-m", "-k", "-p", "-c", "-o", "-n", "-W", "--dist", "--numprocesses", "--maxfail", "--tb",
                  "--ignore", "--ignore-glob", "--deselect", "--basetemp", "--rootdir", "--junitxml", "--log-file",
                  "--config-file", "--junit-xml", "--confcutdir"}
#: pytest options naming a path, read from the current folder when it holds it (as a path to run is),
#: and those naming a file or folder pytest writes, always put in the current folder.
_PATH_OPTIONS = frozenset({"--ignore", "--deselect", "-c", "--config-file", "--rootdir", "--confcutdir"})
_OUTPUT_OPTIONS = frozenset({"--junitxml", "--junit-xml", "--basetemp", "--log-file"})
#: pytest options with which it runs no test (no JVM starts).
_RUNS_NOTHING = frozenset({"--co", "--collect-only", "-h", "--help", "--version", "-V", "--markers", "--fixtures",
                           "--fixtures-per-test"})


def _from_here(option: str, value: str) -> str:
    """The ``value`` of a path ``option`` (:data:`_PATH_OPTIONS`, :data:`_OUTPUT_OPTIONS`), absolute when it is
    to be read from the current folder; for ``--deselect``, a test id, relative to the repository root
    as pytest's ids are (pytest runs there).

    >>> _from_here("--deselect", "tests/test_cli.py::test_help")
    'tests/test_cli.py::test_help'
    """
    path, sep, test = value.partition("::")
    if path and not Path(path).is_absolute() and (option in _OUTPUT_OPTIONS or Path(path).exists()):
        found = Path(path).resolve()
        return f"{os.path.relpath(found, SOURCE_ROOT) if option == '--deselect' else found}{sep}{test}"
    return value


def _named_paths(extra: Sequence[str]) -> tuple[list[str], list[Path]]:
    """pytest's arguments, a path (``file``, ``file::test``, an option's: :func:`_from_here`) in the current
    folder made absolute; the files and folders they name to run (from the current folder, else the
    repository root, where pytest runs).

    >>> _named_paths(["-m", "not browser", "tests/test_cli.py::test_help"])[1] == [SOURCE_ROOT / "tests/test_cli.py"]
    True
    >>> _named_paths(["--junitxml", "out.xml"])[0] == ["--junitxml", str(Path("out.xml").resolve())]
    True
    """
    args: list[str] = []
    named: list[Path] = []
    for index, arg in enumerate(extra):
        path, sep, test = arg.partition("::")
        option, equals, value = arg.partition("=")
        previous = extra[index - 1] if index else ""
        if equals and option.startswith("--") and option in _PATH_OPTIONS | _OUTPUT_OPTIONS:
            args.append(f"{option}={_from_here(option, value)}")
        elif previous in _PATH_OPTIONS | _OUTPUT_OPTIONS:
            args.append(_from_here(previous, arg))
        elif not path or arg.startswith("-") or previous in _VALUE_OPTIONS:
            args.append(arg)
        elif Path(path).exists():
            named.append(Path(path).resolve())
            args.append(f"{named[-1]}{sep}{test}")
        else:
            args.append(arg)
            named.extend([SOURCE_ROOT / path] if (SOURCE_ROOT / path).exists() else [])
    return args, named


def _left_out(marker: str, args: Sequence[str], *, quick: bool = False) -> bool:
    """Whether the ``-m`` expression in effect (the last in ``args``, else ``--quick``'s) leaves out the tests
    marked ``marker``: it joins ``not marker`` to the rest with ``and`` only.

    >>> _left_out("spark", ["-m", "not spark and not browser"]), _left_out("spark", ["-m", "not browser or not spark"])
    (True, False)
    """
    every, expression = [*(QUICK_ARGS if quick else ()), *args], ""
    for index, arg in enumerate(every):
        if arg.startswith("-m") and (arg != "-m" or index + 1 < len(every)):
            expression = arg[2:] or every[index + 1]
    terms = [" ".join(term.split()) for term in re.split(r"\band\b", expression)]
    return f"not {marker}" in terms and not re.search(r"\bor\b|[()]", expression)


def _starts_no_jvm(args: Sequence[str]) -> bool:
    """Whether the ``-m`` expression in effect leaves out every marker whose tests start a JVM.

    >>> _starts_no_jvm(["-m", "not spark and not browser"]), _starts_no_jvm(["-m", JVM_FREE])
    (False, True)
    """
    return all(_left_out(marker, args) for marker in ("spark", "kernel", "cluster", "browser"))


#: The ``-m`` expression of the tests that start no JVM: the pure ones.
JVM_FREE = "not spark and not kernel and not cluster and not browser"


def _needs_chromium(extra: Sequence[str], *, quick: bool = False) -> bool:
    """Whether a run can select browser tests: not when the ``-m`` expression in effect leaves them out
    (:func:`_left_out`), nor when the named files are no folder and no file that uses the ``browser`` marker.

    >>> _needs_chromium([]), _needs_chromium(["-m", "not spark and not browser"]), _needs_chromium(["tests"])
    (True, False, True)
    """
    args, named = _named_paths(extra)
    if _left_out("browser", args, quick=quick):
        return False
    return not named or any(path.is_dir() or "mark.browser" in path.read_text(errors="replace") for path in named)


def _java_or_fail() -> JavaInfo:
    """The Java for Spark, or a one-line CliError; a Java Spark 4 does not support gets one warning line."""
    try:
        java = require_java()
    except RuntimeError as error:
        raise CliError(str(error)) from None
    if warning := java_warning(java):
        print(f"workbench: warning: {warning} (found {java.path}, from {java.source}); if Spark fails to start, "
              "point JAVA_HOME at a Java 17 or 21", file=sys.stderr, flush=True)
    return java


def _replace_with(command: list[str], env: Mapping[str, str], cwd: Path | None = None) -> int:
    """Replace this process with ``command`` (in ``cwd``): Ctrl-C and signals reach it alone, and it
    ends in its own time (pytest ends its JupyterLab servers and clusters, and removes their folders)."""
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name != "posix":  # pragma: no cover
        return subprocess.run(command, cwd=cwd, env=env, check=False).returncode
    if cwd is not None:
        os.chdir(cwd)
    os.execve(command[0], command, env)
    return 0  # pragma: no cover (execve does not return)


def cmd_lab(extra: Sequence[str]) -> int:
    """``workbench lab``: check the arguments and Java, then replace this process with ``jupyter lab``."""
    if refused := _lab_refusal(extra):
        raise CliError(refused)
    java = _java_or_fail()
    command = lab_command(extra, root_dir=notebooks_dir(), as_root=is_root())
    from ._class_archive import current_archive, record_in_background

    # While JupyterLab starts and the user picks a notebook: the first session then maps it too.
    archive = current_archive(java)
    if archive is not None and not (os.environ.get("WORKBENCH_MASTER") or os.environ.get("SPARK_REMOTE")):
        record_in_background(archive, {})  # only the embedded local Spark maps it
    return _replace_with(command, os.environ)


def cmd_test(extra: Sequence[str], *, quick: bool = False) -> int:
    """``workbench test``: check pytest, Java and (when browser tests may run) Chromium, then become
    pytest in the repository root; ``quick`` runs the everyday tier. Paths are read from the current
    folder (:func:`_named_paths`); :data:`SPARK_CHOICE_VARIABLES` are left out (one line names them).
    """
    if not (SOURCE_ROOT / "pyproject.toml").is_file() or not (SOURCE_ROOT / "tests").is_dir():
        raise CliError(f"workbench: no test suite next to {PACKAGE_DIR}; run `workbench test` from a source "
                       "checkout installed with pip install -e '.[test]'.")
    missing = [name for name, module in (("pytest", "pytest"), ("pytest-xdist", "xdist")) if not find_spec(module)]
    if missing:
        raise CliError(f"workbench: {' and '.join(missing)} not installed, which workbench test needs; "
                       "install the test extra: pip install -e '.[test]'")
    java = _java_or_fail()
    ignored = [name for name in SPARK_CHOICE_VARIABLES if os.environ.get(name)]
    if ignored:
        print(f"workbench: ignoring {', '.join(ignored)} for the test run (the suite starts Spark of its own)",
              file=sys.stderr, flush=True)
    env = {key: value for key, value in os.environ.items() if key not in SPARK_CHOICE_VARIABLES}
    args, named = _named_paths(extra)
    if _needs_chromium(args, quick=quick):
        env["WORKBENCH_CHROMIUM"] = ensure_chromium()
    # No archive for a run that starts no JVM, nor without the user's SPARK_HOME (it would be that Spark's).
    if not (quick or named or "SPARK_HOME" in ignored or _RUNS_NOTHING & {*args} or _starts_no_jvm(args)):
        class_archive_first(java)
    return _replace_with(pytest_command(args, quick=quick), env, SOURCE_ROOT)


def class_archive_first(java: JavaInfo | None = None) -> None:
    """Make the class data archive before a suite-wide run's JVMs start, if it is missing.

    ``java`` is the Java found already; found here (or a one-line error) when None. The
    version matrix's sessions (``noxfile.py``) call it for their own virtualenvs.

    Every local session's JVM maps it (``workbench/_class_archive.py``), about 1.5 s sooner
    each: the suite's ~60 JVMs gain from the first, and no test meets the background
    process that a first session would start to make it. Once per Java and pyspark; a run of
    named tests skips it (the archive costs about 25 s to make), as does one that starts no
    JVM (``--collect-only``, ``--help``, ``-m "not spark"``).
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
    """The lines ``workbench doctor`` prints, and whether ``workbench lab`` can start and the Spark
    sessions would use (``SPARK_HOME``, the master or Connect server) is sound and answers.

    Examples
    --------
    >>> lines, ok = doctor_lines()         # doctest: +SKIP
    >>> lines[0]                           # doctest: +SKIP
    'python      3.11.7 (/home/me/workbench/.venv/bin/python)'
    """
    environ = os.environ if environ is None else environ
    python = ".".join(str(part) for part in sys.version_info[:3])
    lines = [f"{'python':<11} {python} ({sys.executable})"]

    java_lines, java, ok = java_doctor_lines(environ)
    lines.extend(java_lines)

    for package in ("pyspark", "jupyterlab"):
        version = _package_version(package)
        ok = ok and version is not None
        lines.append(f"{package:<11} {version or 'not installed'}")

    home_line, home_ok = spark_home_line(environ, _package_version("pyspark"))
    spark_line, spark_ok = spark_doctor_line(environ)
    ok = ok and home_ok and spark_ok
    lines.extend([*([home_line] if home_line else []), spark_line])

    from ._labext import doctor_line, labextension_status

    # The JupyterLab extension holds the Streams panel and the Spark UI tab; JupyterLab starts and
    # charts draw without it, so its line (disabled, not installed) does not fail the check.
    lines.append(doctor_line(labextension_status()))

    from ._class_archive import current_archive, status

    # Local sessions start their JVM ~1.5 s sooner with it (made once per Java and pyspark).
    archive = current_archive(java) if java is not None else None
    if archive is not None:
        lines.append(f"{'classes':<11} {status(archive)}")

    configured = environ.get("WORKBENCH_CHROMIUM")
    chromium = find_chromium(environ) or (f"WORKBENCH_CHROMIUM={configured} is not executable" if configured else
                                          f"not found (only the browser tests need it; {CHROMIUM_HINT})")
    lines.append(f"{'chromium':<11} {chromium}")
    return lines, ok


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
            "folder). Open the printed URL, which carries the token. Other arguments go to jupyter "
            "lab, e.g. workbench lab --port=8899 --no-browser (a loopback --ip, a --notebook-dir or a "
            "file to open replaces the default); those that would undo the above (--ip=0.0.0.0, an empty "
            "token, --ServerApp.allow_origin), or such settings in Jupyter's config files, are refused."
        ),
        allow_abbrev=False,
    )
    lab.set_defaults(handler=cmd_lab)
    test = commands.add_parser(
        "test",
        usage="workbench test [-h] [--quick] [PYTEST_ARGS ...]",
        help="run the test suite with pytest",
        description=(
            "Check pytest, Java and, when browser tests can run, Chromium (installed with apt-get when "
            "root; else set WORKBENCH_CHROMIUM), then run pytest in the repository root without SPARK_REMOTE, "
            "WORKBENCH_MASTER, WORKBENCH_CHECKPOINT_ROOT, PYSPARK_SUBMIT_ARGS and SPARK_HOME, on two pytest-xdist "
            "workers "
            "(-n 0: one process). Other arguments go to pytest, e.g. workbench test -m 'not browser' or "
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
            "Print one line each for Python, Java, pyspark, JupyterLab, SPARK_HOME when set, the Spark "
            "sessions would use (embedded, the cluster of WORKBENCH_MASTER or the Spark Connect server of "
            "SPARK_REMOTE, with a quick check that it answers), the JupyterLab extension and Chromium. Exits "
            "with 1 when workbench lab could not start (no suitable Java, or a package missing) or that Spark "
            "is malformed or unreachable (SPARK_HOME without spark-submit or of another version than pyspark, "
            "a bad URL or port); the extension's line and Chromium's inform only."
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
    except (CliError, ChromiumMissing) as error:
        print(error, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
