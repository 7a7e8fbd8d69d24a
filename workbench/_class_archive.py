"""A class data archive of Spark's classes, so that a local session's JVM starts sooner.

Most of a local session's start (4-5 s on 2 cores) is the JVM loading, parsing and verifying
some 10,000 classes of Spark's. Java's Class Data Sharing maps them from an archive instead:
measured on this project's 2-core machine, ``SparkSession.builder.getOrCreate()`` took 3.9 s
without an archive and 2.3-2.5 s with one (``bench/bench_first_chart.py`` has the figures for a
notebook's first chart).

The archive is made once per Java and pyspark installation, by a process of its own in the
background (lowest CPU priority), after the first local session of that installation
started without one (and when ``workbench lab`` starts): it starts a local session with
``-XX:ArchiveClassesAtExit``, runs a small stateful stream through the workbench, and ends
its JVM, which then writes the classes it loaded (:mod:`workbench.spark.class_recording`).
The archive is checked (a JVM must start with it) before it is moved into place, in one
rename; a JVM never maps a half-written file. A JVM that ignores a file that is not an
archive (its memory map says so) has it put aside; a recording that failed is tried again a
day later. Later local sessions start their JVM
with ``-XX:SharedArchiveFile``; where it cannot be used (another class path) the JVM runs
without it.

Where: ``$XDG_CACHE_HOME/spark-streaming-workbench/class-archives`` (``~/.cache/...``), about
150-175 MB per Java and pyspark pair. Each archive has a note beside it (``.json``: the Java
and the Spark installation it was made for); whenever an archive is made, those of
installations that are gone (a deleted virtualenv, a pyspark upgraded in place, a Java
removed) are removed (:func:`prune`), so that the folder does not grow with every virtualenv
a machine ever had. ``WORKBENCH_CLASS_ARCHIVE=0`` turns it off (nothing is read
or made); sessions that add jars to the driver's class path (``spark.jars``,
``spark.jars.packages``, ``spark.driver.extraClassPath``) or set their own class data options
start without it. Only the embedded local Spark uses it: a cluster's or a Spark Connect
server's JVMs are started by their owners.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._java import JavaInfo

__all__ = ["ENV", "archive_folder", "archive_path", "archive_options", "without_archive", "mapped_by",
           "record_in_background", "record_now", "claimed", "ensure", "current_archive", "status",
           "write_note", "prune", "run_to_end"]

log = logging.getLogger(__name__)

#: Set to ``0`` (or ``false``, ``no``, ``off``) to start every JVM without an archive.
ENV = "WORKBENCH_CLASS_ARCHIVE"
#: Settings that change the driver's class path: an archive recorded without them would not fit.
CLASS_PATH_SETTINGS = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath")
#: The JVM's own messages about archives (a class path that does not fit) stay out of the notebook.
QUIET = "-Xlog:cds*=off"
#: The module that makes an archive (``python -m RECORDER PATH``; it runs a local session).
RECORDER = "workbench.spark.class_recording"
#: A recording older than this is taken for a dead one (its process was killed).
STALE_AFTER_S = 900.0
#: A failed recording is tried again after this long (what failed may have been passing: load, a timeout).
RETRY_AFTER_S = 86400.0
#: An archive without a note (made before archives had one) is removed when older than this.
UNNOTED_AFTER_S = 30 * 86400.0
#: The first bytes of a dynamic class data archive (HotSpot's magic number, little-endian).
DYNAMIC_MAGIC = bytes.fromhex("a8ab0bf0")


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether archives are read and made (``WORKBENCH_CLASS_ARCHIVE`` is not ``0``/``false``/``no``/``off``).

    >>> enabled({}), enabled({"WORKBENCH_CLASS_ARCHIVE": "0"})
    (True, False)
    """
    environ = os.environ if environ is None else environ
    return environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def archive_folder(environ: Mapping[str, str] | None = None) -> Path:
    """The folder archives live in (``$XDG_CACHE_HOME`` or ``~/.cache``, then ``spark-streaming-workbench``).

    >>> archive_folder({"XDG_CACHE_HOME": "/c"}).as_posix()
    '/c/spark-streaming-workbench/class-archives'
    """
    return cache_root(environ) / "spark-streaming-workbench" / "class-archives"


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """The user's cache folder: ``$XDG_CACHE_HOME``, or ``~/.cache``.

    >>> cache_root({"XDG_CACHE_HOME": "/c"}).as_posix()
    '/c'
    """
    environ = os.environ if environ is None else environ
    return Path(environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"))


def installed_pyspark() -> Path | None:
    """The installed pyspark's folder (pip's ``SPARK_HOME``), found without importing it."""
    spec = importlib.util.find_spec("pyspark")
    return Path(spec.submodule_search_locations[0]).resolve() if spec and spec.submodule_search_locations else None


def _spark_home() -> Path:
    # Found without importing pyspark: the command line's doctor reads the status too.
    return Path(os.environ.get("SPARK_HOME") or installed_pyspark() or ".").resolve()


def archive_path(java: str, java_version: str, environ: Mapping[str, str] | None = None,
                 home: Path | None = None) -> Path:
    """The archive for this Java and this Spark installation (its jars, by name and size).

    Parameters
    ----------
    java : str
        The Java executable Spark starts (see ``workbench._java.find_java``).
    java_version : str
        Its version, as ``java -version`` prints it.
    environ : mapping of str to str, optional
        Where ``XDG_CACHE_HOME`` is read (this process's environment when None).
    home : pathlib.Path, optional
        The Spark installation (the one this process would start when None).

    Examples
    --------
    >>> archive_path("/usr/bin/java", "17.0.15").suffix   # doctest: +SKIP
    '.jsa'
    """
    home = _spark_home() if home is None else home
    digest = hashlib.sha256(repr((os.path.realpath(java), java_version, str(home), _jars(home))).encode()).hexdigest()
    return archive_folder(environ) / f"spark-{digest[:20]}.jsa"


@functools.lru_cache(maxsize=4)
def _jars(home: Path) -> tuple[tuple[str, int], ...]:
    """Spark's jars (name, size) under ``home``: listed once per process (some 250 files)."""
    jars = home / "jars"
    if not jars.is_dir():
        return ()
    return tuple(sorted((entry.name, entry.stat().st_size) for entry in os.scandir(jars) if entry.is_file()))


def archive_options(settings: Mapping[str, str], archive: Path) -> str | None:
    """The JVM options that map ``archive``, or None when this session must start without it.

    >>> archive_options({}, Path("/no/such.jsa")) is None
    True
    """
    if not enabled() or not archive.is_file():
        return None
    if any(settings.get(key) for key in CLASS_PATH_SETTINGS):
        return None
    if "SharedArchiveFile" in settings.get("spark.driver.extraJavaOptions", "") or "-Xshare" in settings.get(
            "spark.driver.extraJavaOptions", ""):
        return None
    return f"-XX:SharedArchiveFile={archive} {QUIET}"


def without_archive(archive: Path, reason: str) -> None:
    """Put aside an archive a JVM could not use: ``.failed`` says why, and it is never mapped again."""
    try:
        archive.unlink(missing_ok=True)
        archive.with_suffix(".failed").write_text(reason + "\n")
    except OSError:
        log.debug("could not put aside %s", archive, exc_info=True)


def is_archive(path: Path) -> bool:
    """Whether ``path`` starts like a dynamic class data archive (a JVM that ignores such a
    file had another class path; anything else is not an archive at all).

    >>> is_archive(Path("/no/such.jsa"))
    False
    """
    try:
        with open(path, "rb") as file:
            return file.read(len(DYNAMIC_MAGIC)) == DYNAMIC_MAGIC
    except OSError:
        return False


def mapped_by(pid: int, archive: Path) -> bool | None:
    """Whether process ``pid`` maps ``archive`` (from ``/proc``); None where that cannot be read.

    A JVM ignores an archive it cannot use without a word (and then even the JDK's own).

    >>> mapped_by(os.getpid(), Path("/no/such.jsa")) in (False, None)
    True
    """
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as maps:
            return any(line.rstrip().endswith(str(archive)) for line in maps)
    except OSError:
        return None


def record_in_background(archive: Path, settings: Mapping[str, str]) -> bool:
    """Make ``archive`` in a low-priority process of its own, unless it exists or is being made.

    The process is not a child of this one (it would look like a leaked JVM to whoever counts
    a kernel's children): a short-lived launcher starts it in a session of its own and exits.

    Parameters
    ----------
    archive : pathlib.Path
        Where the archive goes (:func:`archive_path`).
    settings : mapping of str to str
        The session's Spark settings: none is made for a class path of the user's.

    Returns
    -------
    bool
        Whether a recording was started.

    Examples
    --------
    >>> record_in_background(archive_path(java, version), {})   # doctest: +SKIP
    True
    """
    if any(settings.get(key) for key in CLASS_PATH_SETTINGS) or not _may_record(archive):
        return False
    launcher = ("import subprocess, sys; subprocess.Popen(sys.argv[1:], start_new_session=True, "
                "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)")
    if not _run(archive, [sys.executable, "-c", launcher, *_recorder_command(archive)]):
        return False
    log.info("recording a class data archive for later JVMs in the background: %s", archive)
    return True


def record_now(archive: Path) -> bool:
    """Make ``archive`` here and wait for it (``workbench test`` does, before the suite's JVMs start).

    Returns
    -------
    bool
        Whether the archive is in place.

    Examples
    --------
    >>> record_now(archive_path(java, version))   # doctest: +SKIP
    True
    """
    if _may_record(archive):
        try:
            _run(archive, _recorder_command(archive))
        except KeyboardInterrupt:
            _release(archive)  # the recorder has ended (it had the Ctrl-C too), early or not: no one holds the claim
            raise
    return archive.exists()


def _may_record(archive: Path) -> bool:
    """Whether to make ``archive``: enabled, not made or put aside, and claimed by this process."""
    if not enabled() or archive.exists() or _failed_recently(archive):
        return False
    return _claim(archive)


def _failed_recently(archive: Path) -> bool:
    """Whether ``archive`` was put aside or failed to be made within :data:`RETRY_AFTER_S`."""
    failed = archive.with_suffix(".failed")
    try:
        if time.time() - failed.stat().st_mtime < RETRY_AFTER_S:
            return True
    except OSError:
        return False
    failed.unlink(missing_ok=True)
    return False


def _recorder_command(archive: Path) -> list[str]:
    return [sys.executable, "-m", RECORDER, str(archive)]


def run_to_end(command: list[str], timeout: float | None = None, **options) -> subprocess.CompletedProcess:
    """Run ``command`` as ``subprocess.run`` does, except that on Ctrl-C it waits for it to end.

    The command had the Ctrl-C too (it is in the terminal's process group) and ends in its own
    time: the recorder removes its ``.lock`` and ``.tmp``, apt-get does not leave dpkg halfway
    (``workbench test``). ``subprocess.run`` would kill it a quarter of a second later.

    Parameters
    ----------
    command : list of str
        The command line.
    timeout : float, optional
        Seconds after which it is killed and ``subprocess.TimeoutExpired`` raised.
    **options
        For ``subprocess.Popen`` (``env``, ``stdout``, ...).

    Returns
    -------
    subprocess.CompletedProcess

    Examples
    --------
    >>> run_to_end([sys.executable, "-c", "raise SystemExit(3)"]).returncode
    3
    """
    with subprocess.Popen(command, **options) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
        except KeyboardInterrupt:
            process.communicate()
            raise
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def _run(archive: Path, command: list[str]) -> bool:
    """Run ``command`` (the recorder, or its launcher); whether it could start (releases the claim if not)."""
    try:
        run_to_end(command, timeout=600, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=_recorder_env())
    except (OSError, subprocess.SubprocessError):
        log.debug("could not make the class archive", exc_info=True)
        _release(archive)
        return False
    return True


def ensure(java: JavaInfo | None = None) -> Path | None:
    """Make this installation's archive now when it is missing; its path, or None without one.

    ``workbench test`` calls it before the suite starts its JVMs (some 60 of them).

    Parameters
    ----------
    java : JavaInfo, optional
        The Java found already (``workbench._java.find_java``); found here when None.

    Examples
    --------
    >>> ensure()                          # doctest: +SKIP
    PosixPath('/home/me/.cache/spark-streaming-workbench/class-archives/spark-5b1bf72824b2dbf6e468.jsa')
    """
    archive = current_archive(java)
    return archive if archive is not None and record_now(archive) else None


def current_archive(java: JavaInfo | None = None) -> Path | None:
    """The archive of the Java and pyspark this process would start (None without a Java).

    Parameters
    ----------
    java : JavaInfo, optional
        The Java found already; found here (``java -version`` runs once more) when None.
    """
    if java is None:
        from ._java import find_java

        java = find_java()
    if java is None or java.version is None:
        return None
    return archive_path(java.path, java.version)


def status(archive: Path) -> str:
    """One line for ``workbench doctor``: whether the archive is there, being made, or failed.

    >>> status(Path("/no/such/spark-x.jsa"))
    'none yet (made in the background after the first local session)'
    """
    if not enabled():
        return f"off ({ENV}=0)"
    if archive.is_file():
        return f"{archive} ({archive.stat().st_size / 1e6:.0f} MB)"
    failed = archive.with_suffix(".failed")
    if failed.exists():
        return f"not made: {failed.read_text().strip()} (tried again a day later; remove {failed} to try sooner)"
    if archive.with_suffix(".lock").exists():
        return "being made in the background"
    return "none yet (made in the background after the first local session)"


def _claim(archive: Path) -> bool:
    lock = archive.with_suffix(".lock")
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
        if lock.exists() and time.time() - lock.stat().st_mtime > STALE_AFTER_S:
            lock.unlink(missing_ok=True)
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError:
        return False
    os.close(fd)
    for left in archive.parent.glob(f"{archive.stem}.*.tmp"):  # of a recording that was killed
        left.unlink(missing_ok=True)
    return True


def _release(archive: Path) -> None:
    archive.with_suffix(".lock").unlink(missing_ok=True)


@contextmanager
def claimed(archive: Path) -> Iterator[Path]:
    """Hold the claim a recording took (its ``.lock``) while making ``archive``; yields the temporary path.

    The temporary file and the claim go at the end, whatever happens; what went wrong is
    written to ``.failed`` (so that no session tries again for a day, and ``workbench doctor``
    says why).
    """
    tmp = archive.with_name(f"{archive.stem}.{os.getpid()}.tmp")
    try:
        yield tmp
    except Exception as error:
        archive.with_suffix(".failed").write_text(f"{type(error).__name__}: {error}\n")
    finally:
        tmp.unlink(missing_ok=True)
        _release(archive)


def write_note(archive: Path, java: str, java_version: str, home: Path | None = None) -> Path | None:
    """Write the note beside ``archive``: the Java and Spark installation it was made for (see :func:`prune`).

    Only for the archive of that Java and Spark installation (``home``; this process's when
    None) as :func:`archive_path` names it; None for another (a note that did not fit would
    have it pruned).

    Examples
    --------
    >>> write_note(archive_path("/usr/bin/java", "17.0.15"), "/usr/bin/java", "17.0.15")   # doctest: +SKIP
    PosixPath('/home/me/.cache/spark-streaming-workbench/class-archives/spark-5b1bf72824b2dbf6e468.json')
    """
    home = _spark_home() if home is None else home
    if archive_path(java, java_version, home=home).name != archive.name:
        return None
    note = archive.with_suffix(".json")
    note.write_text(json.dumps({"java": os.path.realpath(java), "java_version": java_version, "spark_home": str(home)}),
                    encoding="utf-8")
    return note


def prune(folder: Path) -> list[Path]:
    """Remove the archives in ``folder`` whose installation is gone; the files removed.

    An archive goes with its note when the note's Spark installation or Java no longer
    exists, or when that installation's jars have changed since (its archive would have
    another name now). An archive without a note goes when older than
    :data:`UNNOTED_AFTER_S`; a note without an archive (nor a recording under way) goes
    too. Removing an archive a running JVM maps is safe: the JVM keeps its mapping. It
    never raises: what it cannot check or remove stays (a recording calls it while it holds
    its claim, and must not count a clean-up's failure as its own).

    Examples
    --------
    >>> prune(archive_folder())                      # doctest: +SKIP
    [PosixPath('/home/me/.cache/spark-streaming-workbench/class-archives/spark-0268ade42e5709a6959d.jsa'), ...]
    """
    now = time.time()
    _jars.cache_clear()  # an installation's jars as they are now
    removed: list[Path] = []
    for archive in sorted(folder.glob("spark-*.jsa")):
        note = archive.with_suffix(".json")
        try:
            if note.is_file():
                made_for = json.loads(note.read_text(encoding="utf-8"))
                home = Path(made_for["spark_home"])
                gone = (not home.is_dir() or not os.path.exists(made_for["java"])
                        or archive_path(made_for["java"], made_for["java_version"], home=home).name != archive.name)
            else:
                gone = now - archive.stat().st_mtime > UNNOTED_AFTER_S
            if gone:
                for path in (archive, note, archive.with_suffix(".failed")):
                    if path.exists():
                        path.unlink()
                        removed.append(path)
        except (OSError, ValueError, KeyError, TypeError):
            log.debug("could not check %s", archive, exc_info=True)
    for note in folder.glob("spark-*.json"):  # of a recording that failed after writing it
        if not note.with_suffix(".jsa").exists() and not note.with_suffix(".lock").exists():
            try:
                note.unlink(missing_ok=True)
            except OSError:
                log.debug("could not remove %s", note, exc_info=True)
                continue
            removed.append(note)
    if removed:
        log.info("removed class data archives of installations that are gone: %s", [str(p) for p in removed])
    return removed


def _recorder_env() -> dict[str, str]:
    from ._spark_target import SPARK_CHOICE_VARIABLES  # the recorder starts the embedded local Spark

    # ... of this SPARK_HOME, whose jars the archive is for (archive_path).
    left_out = set(SPARK_CHOICE_VARIABLES) - {"SPARK_HOME"}
    return {key: value for key, value in os.environ.items() if key not in left_out}
