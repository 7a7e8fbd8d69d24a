"""Where the test suite's CPU goes: every process's CPU time, by test file and by kind of process.

The suite is bound by its CPU on two cores (its two workers stay busy to the end), so the
seconds to take off are CPU-seconds, not waits. This runs a test command (by default the
full suite, ``workbench test``) and samples every process of the machine twice a second
(``/proc/PID/stat``). Each process's CPU is put down to its kind (JVM, Chromium, kernel,
JupyterLab server, pyspark's Python workers, pytest) and to a test file: the one a pytest
worker was running when the process (or the first of its ancestors below that worker) was
started, which a small plugin of this script writes down as each test starts. So a
JupyterLab server, the kernels it starts and their Spark JVMs, and Chromium, all count for
the test file that started the server. A worker's own local Spark (its JVM) is its shared
session, and the workers' own CPU (the tests that run in their process) is counted apart too;
a last table splits the shared sessions' CPU by the test file their worker was running at
each sample (to half a second: a test's last batches may count for the next).
The machine's busy CPU over the run (``/proc/stat``) is printed beside the total, so that what
the sampling missed (processes shorter than half a second, the last half second of each) shows.

    .venv/bin/python bench/suite_cpu.py                        # the full suite
    .venv/bin/python bench/suite_cpu.py -- --quick             # any `workbench test` arguments
    .venv/bin/python bench/suite_cpu.py --top 40 -- tests/test_state.py

Figures from a run are in ``docs/development.md`` ("Where the time goes").
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from machine_cpu import TICK, busy_seconds

REPO = Path(__file__).resolve().parent.parent
#: The folder where each pytest process writes the test file it runs (a file named by its pid).
RUNNING = "SUITE_CPU_RUNNING"
SHARED_SESSIONS = "(the workers' shared sessions)"
NO_TEST = "(no test running)"
WORKERS = "(the pytest workers themselves)"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logstart(nodeid: str, location: tuple) -> None:
    """In each pytest process: write down the test file (or notebook) about to run."""
    folder = os.environ.get(RUNNING)
    if folder:
        Path(folder, str(os.getpid())).write_text(nodeid.split("::", 1)[0].split("@", 1)[0], encoding="utf-8")


def kind_of(command: str) -> str:
    """What a process is, from its command line."""
    program = command.split(" ", 1)[0]
    if program.endswith("java"):
        return "JVM"
    if "chrom" in program:
        return "Chromium"
    for needle, kind in (("ipykernel", "kernel"), ("pyspark.daemon", "pyspark worker"), ("jupyter", "JupyterLab"),
                         ("pytest", "pytest"), ("exec(eval(", "pytest"), ("python", "Python")):
        if needle in command:
            return kind
    return os.path.basename(program) or "other"


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def environ_of(pid: int) -> dict[str, str]:
    """Process ``pid``'s environment as it started (empty when it cannot be read)."""
    try:
        entries = _read(f"/proc/{pid}/environ").split(b"\0")
    except OSError:
        return {}
    pairs = (entry.decode(errors="replace").partition("=") for entry in entries if b"=" in entry)
    return {name: value for name, _, value in pairs}


def test_file(current_test: str) -> str:
    """The test file (or notebook) of a ``PYTEST_CURRENT_TEST`` value, or "".

    >>> test_file("tests/test_cluster.py::test_console_sink[cluster] (setup)")
    'tests/test_cluster.py'
    >>> test_file("notebooks/04-joins.ipynb::Cell 3@notebooks/04-joins_ipynb (call)")
    'notebooks/04-joins.ipynb'
    >>> test_file("")
    ''
    """
    return current_test.split("::", 1)[0].split("@", 1)[0] if "::" in current_test else ""


def short_command(command: str) -> str:
    """A process's command, short: a JVM's main class (or pyspark's shell), else its program and first argument.

    >>> short_command("/usr/bin/java -cp a:b -Xmx1g org.apache.spark.deploy.worker.Worker spark://x")
    'java org.apache.spark.deploy.worker.Worker'
    >>> short_command("/venv/bin/python -m ipykernel_launcher -f k.json")
    'python -m'
    """
    words = command.split()
    if not words:
        return "?"
    program = os.path.basename(words[0])
    if program == "java":
        main = next((w for w in words[1:] if w.startswith("org.") or w == "pyspark-shell"), "")
        return f"java {main}".strip()
    return " ".join([program, *words[1:2]])


class Sampler:
    """Samples every process's CPU time; ``files`` and ``kinds`` hold the CPU-seconds so far."""

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.files: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        #: The shared sessions' CPU by the test file their worker was running when it was sampled.
        self.shared: Counter[str] = Counter()
        #: The CPU of processes put down to no test, by their short command.
        self.unplaced: Counter[str] = Counter()
        # (pid, start) -> [comm, label, kind, ticks, the pytest process above a shared session's process,
        # short command]
        self._seen: dict[tuple[int, str], list] = {}
        self.folder = Path(tempfile.mkdtemp(prefix="suite-cpu-"))
        self._born = float(Path("/proc/uptime").read_text().split()[0]) * TICK
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="suite-cpu-sampler", daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def _label(self, pid: int, parent: int) -> tuple[str, str, int | None] | None:
        """The process's test file (or group), its kind, and for a shared session's process its pytest worker."""
        try:
            command = _read(f"/proc/{pid}/cmdline").replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return None
        kind = kind_of(command)
        if "exec(eval(" in command or "--dist" in command:  # a pytest-xdist worker, or their controller
            return WORKERS, kind, None
        if kind == "JVM" and "pyspark-shell" in command and self._running(parent) is not None:
            return SHARED_SESSIONS, kind, parent  # the local Spark of a worker's own process
        for ancestor, start in self._ancestors(parent):
            if (running := self._running(ancestor)) is not None:
                return running or NO_TEST, kind, None
            if (entry := self._seen.get((ancestor, start))) is not None:  # labelled when it started
                return entry[1], kind, entry[4]  # a shared session's Python workers keep its worker
        # No pytest process above it (a daemon whose parent ended before it was sampled): the
        # test that was running when an ancestor started it, which its environment inherited.
        return test_file(environ_of(pid).get("PYTEST_CURRENT_TEST", "")) or NO_TEST, kind, None

    @staticmethod
    def _command(pid: int) -> str:
        try:
            return short_command(_read(f"/proc/{pid}/cmdline").replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            return "?"

    def _running(self, pid: int) -> str | None:
        """The test file pytest process ``pid`` last started a test of, or None if it is no pytest process."""
        try:
            return (self.folder / str(pid)).read_text(encoding="utf-8")
        except OSError:
            return None

    @staticmethod
    def _ancestors(pid: int) -> list[tuple[int, str]]:
        """``pid`` and its ancestors, each with its start time (a pid reused since is another process)."""
        found = []
        while pid > 1 and len(found) < 30:
            try:
                rest = _read(f"/proc/{pid}/stat").decode(errors="replace").rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                break
            found.append((pid, rest[19]))
            pid = int(rest[1])
        return found

    def sample(self) -> None:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                stat = _read(f"/proc/{name}/stat").decode(errors="replace")
            except OSError:
                continue
            comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
            ticks, start = int(rest[11]) + int(rest[12]), rest[19]
            entry = self._seen.get((int(name), start))
            if entry is None or entry[0] != comm:  # new, or it has exec'd another program since
                label = self._label(int(name), int(rest[1]))
                if label is None:
                    continue
                if entry is None:
                    # A process born during the run counts from its start, one found running from now.
                    entry = [comm, label[0], label[1], 0 if int(start) > self._born else ticks, label[2],
                             self._command(int(name))]
                    self._seen[(int(name), start)] = entry
                else:
                    entry[0:3], entry[4], entry[5] = [comm, label[0], label[1]], label[2], self._command(int(name))
            _, file, kind, last, worker, _ = entry
            if ticks > last:
                seconds = (ticks - last) / TICK
                self.files[file] += seconds
                self.kinds[kind] += seconds
                if worker is not None:  # what its worker runs now asked for it (since the last sample)
                    self.shared[self._running(worker) or NO_TEST] += seconds
                if file == NO_TEST:
                    self.unplaced[entry[5]] += seconds
                entry[3] = ticks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=30, help="test files to list (default 30)")
    parser.add_argument("--log", type=Path, help="write the test command's whole output here")
    parser.add_argument("arguments", nargs="*", help="arguments for `workbench test` (after --)")
    args = parser.parse_args()
    command = [str(Path(sys.executable).with_name("workbench")), "test", "-p", "suite_cpu", *args.arguments]
    busy, wall = busy_seconds(), time.monotonic()
    with Sampler() as sampler:
        env = {**os.environ, RUNNING: str(sampler.folder),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    busy, wall = busy_seconds() - busy, time.monotonic() - wall
    if args.log:
        args.log.write_text(done.stdout, encoding="utf-8")
    print("\n".join(done.stdout.rstrip().splitlines()[-3:]))
    counted = sum(sampler.files.values())
    print(f"\n{' '.join(command[1:])}: {wall / 60:.1f} min, the machine busy {busy:.0f} CPU-s, "
          f"{counted:.0f} of them put down to a process below ({os.cpu_count()} cores)")
    print("\nCPU-s  share  by kind of process")
    for kind, seconds in sampler.kinds.most_common():
        print(f"{seconds:6.0f}  {seconds / counted:5.1%}  {kind}")
    print(f"\nCPU-s  share  by the test file that started the process (the first {args.top})")
    for file, seconds in sampler.files.most_common(args.top):
        print(f"{seconds:6.0f}  {seconds / counted:5.1%}  {file}")
    print(f"\nCPU-s  share  {SHARED_SESSIONS} by the test file their worker was running (the first {args.top})")
    for file, seconds in sampler.shared.most_common(args.top):
        print(f"{seconds:6.0f}  {seconds / counted:5.1%}  {file}")
    if sampler.unplaced:
        print(f"\nCPU-s  share  {NO_TEST} by command")
        for what, seconds in sampler.unplaced.most_common(10):
            print(f"{seconds:6.0f}  {seconds / counted:5.1%}  {what}")
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
