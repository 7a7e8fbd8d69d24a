"""The ``workbench`` command and the Java check, run as real subprocesses where it matters.

The fake ``java`` executables below are shell scripts that print a ``java -version`` banner:
they exercise our discovery and parsing, not Spark.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from workbench import cli
from workbench._java import JavaInfo, find_java, parse_java_version, require_java

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
NO_JAVA = "no Java 17 or 21 found (Spark 4 needs one)"


def run_workbench(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m workbench ARGS`` in a subprocess, from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env, check=False,
    )


def env_without_java(**extra: str) -> dict[str, str]:
    """This environment with ``JAVA_HOME`` removed and ``PATH`` holding only the venv's bin."""
    if shutil.which("java", path=str(BIN)):
        pytest.skip(f"{BIN} holds a java executable")
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "WORKBENCH_CHROMIUM")}
    return {**env, "PATH": str(BIN), **extra}


def fake_java(folder: Path, banner: str) -> Path:
    """A ``folder/bin/java`` script printing ``banner`` to stderr, as ``java -version`` does."""
    java = folder / "bin" / "java"
    java.parent.mkdir(parents=True)
    # Only shell builtins: the tests run it with PATH stripped.
    lines = "".join(f"echo '{line}' >&2\n" for line in banner.splitlines())
    java.write_text(f"#!/bin/sh\n{lines}")
    java.chmod(0o755)
    return java


def banner(version: str) -> str:
    return (
        f'openjdk version "{version}" 2024-01-16\n'
        "OpenJDK Runtime Environment (build test)\n"
        "OpenJDK 64-Bit Server VM (build test, mixed mode, sharing)"
    )


@pytest.fixture
def no_java_on_path(tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("JAVA_HOME", raising=False)


# --- version parsing -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ('openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment', ("17.0.15", 17)),
        ('openjdk version "21.0.2" 2024-01-16 LTS', ("21.0.2", 21)),
        ('openjdk version "21" 2023-09-19', ("21", 21)),
        ('openjdk version "25-ea" 2025-09-16', ("25-ea", 25)),
        ('java version "1.8.0_392"\nJava(TM) SE Runtime Environment', ("1.8.0_392", 8)),
        ('openjdk version "11.0.2" 2019-01-15', ("11.0.2", 11)),
        ('Picked up JAVA_TOOL_OPTIONS: -Xmx1g\nopenjdk version "17.0.1" 2021-10-19', ("17.0.1", 17)),
    ],
)
def test_parse_java_version(output, expected):
    assert parse_java_version(output) == expected


@pytest.mark.parametrize("output", ["", "bash: java: command not found", 'version "abc"'])
def test_parse_java_version_without_a_version(output):
    assert parse_java_version(output) is None


@pytest.mark.parametrize(("major", "supported"), [(8, False), (11, False), (17, True), (21, True), (None, False)])
def test_supported_java(major, supported):
    assert JavaInfo("/java", None if major is None else str(major), major, "PATH").supported is supported


# --- finding and requiring Java --------------------------------------------------------------


def test_require_java_names_a_too_old_java(tmp_path, monkeypatch, no_java_on_path):
    java = fake_java(tmp_path / "jdk11", banner("11.0.2"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk11"))
    with pytest.raises(RuntimeError) as raised:
        require_java()
    message = str(raised.value)
    assert "\n" not in message
    assert "11.0.2" in message and str(java) in message
    assert "Spark 4 needs Java 17 or 21" in message


@pytest.mark.parametrize(("version", "major"), [("17.0.15", 17), ("21.0.2", 21)])
def test_require_java_accepts_17_and_21(tmp_path, monkeypatch, no_java_on_path, version, major):
    java = fake_java(tmp_path / "jdk", banner(version))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert require_java() == JavaInfo(str(java), version, major, "JAVA_HOME")


def test_java_home_wins_over_path(tmp_path, monkeypatch):
    # Spark's launcher uses $JAVA_HOME/bin/java whenever JAVA_HOME is set.
    fake_java(tmp_path / "home", banner("11.0.2"))
    on_path = fake_java(tmp_path / "path", banner("17.0.15"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert find_java().major == 11
    monkeypatch.delenv("JAVA_HOME")
    assert find_java() == JavaInfo(str(on_path), "17.0.15", 17, "PATH")


def test_require_java_without_any_java(no_java_on_path):
    assert find_java() is None
    with pytest.raises(RuntimeError, match="no Java 17 or 21 found") as raised:
        require_java()
    message = str(raised.value)
    assert "\n" not in message
    assert "sudo apt-get install openjdk-17-jre-headless" in message and "JAVA_HOME" in message


def test_require_java_with_a_java_home_holding_no_java(tmp_path, monkeypatch, no_java_on_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(RuntimeError, match="JAVA_HOME is set to") as raised:
        require_java()
    assert str(tmp_path) in str(raised.value) and "\n" not in str(raised.value)


def test_require_java_with_an_unreadable_version(tmp_path, monkeypatch, no_java_on_path):
    fake_java(tmp_path / "odd", "something else entirely")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "odd"))
    with pytest.raises(RuntimeError, match="could not read the version"):
        require_java()


# --- the command in subprocesses -------------------------------------------------------------


def test_help():
    done = run_workbench("--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: workbench")
    for command in ("lab", "test", "doctor"):
        assert command in done.stdout


def test_console_script_is_the_same_command():
    script = BIN / "workbench"
    if not script.exists():
        pytest.skip("the workbench console script is not installed (pip install -e .)")
    by_script = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert by_script.returncode == 0
    assert by_script.stdout == run_workbench("--help").stdout


def test_no_command_is_a_usage_error():
    done = run_workbench()
    assert done.returncode == 2
    assert "usage: workbench" in done.stderr


def test_cli_import_stays_light():
    code = (
        "import sys, workbench.cli, workbench._java; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'py4j', 'pandas', 'IPython', 'jupyterlab'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_doctor_prints_one_line_each():
    done = run_workbench("doctor")
    assert "Traceback" not in done.stderr
    names = [line.split()[0] for line in done.stdout.splitlines()]
    assert names == ["python", "java", "pyspark", "jupyterlab", "spark", "extension", "classes", "chromium"]
    assert re.search(r"^extension   0\.1\.0 enabled \(", done.stdout, re.M), done.stdout
    java_line = done.stdout.splitlines()[1]
    info = find_java()
    if info is not None and info.version:
        assert info.version in java_line and info.path in java_line
    assert done.returncode == (0 if info is not None and info.supported else 1)


def test_doctor_without_java(tmp_path):
    done = run_workbench("doctor", env=env_without_java())
    assert done.returncode == 1
    assert "java        not found (Spark 4 needs Java 17 or 21)" in done.stdout.splitlines()


@pytest.mark.parametrize("command", ["lab", "test"])
def test_no_java_is_one_clear_line(command):
    done = run_workbench(command, env=env_without_java())
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith(f"workbench: {NO_JAVA}. Install it (Debian/Ubuntu: sudo apt-get install")


def test_too_old_java_is_one_clear_line(tmp_path):
    java = fake_java(tmp_path / "jdk11", banner("11.0.2"))
    done = run_workbench("lab", env=env_without_java(JAVA_HOME=str(tmp_path / "jdk11")))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert f"found Java 11.0.2 at {java}" in done.stderr


def test_test_command_rejects_a_bad_workbench_chromium(tmp_path):
    fake_java(tmp_path / "jdk", banner("17.0.15"))
    env = env_without_java(JAVA_HOME=str(tmp_path / "jdk"), WORKBENCH_CHROMIUM=str(tmp_path / "no-chromium"))
    done = run_workbench("test", env=env)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        f"workbench: WORKBENCH_CHROMIUM is set to {tmp_path / 'no-chromium'}, which is not an executable "
        "file; point it at a Chromium binary or unset it."
    )


# --- command lines, without starting anything ------------------------------------------------


@pytest.mark.parametrize("as_root", [True, False])
def test_lab_command(as_root):
    command = cli.lab_command(["--port=8899", "--no-browser"], root_dir=Path("/nb"), as_root=as_root)
    assert command[:4] == [sys.executable, "-m", "jupyter", "lab"]
    assert "--ServerApp.ip=127.0.0.1" in command
    assert "--ServerApp.root_dir=/nb" in command
    assert ("--allow-root" in command) is as_root
    assert command[-2:] == ["--port=8899", "--no-browser"]
    # Token authentication stays on: nothing about tokens, passwords or auth is passed.
    assert not [arg for arg in command if any(word in arg.lower() for word in ("token", "password", "auth"))]


def test_lab_opens_the_notebooks_folder():
    assert cli.notebooks_dir() == (REPO / "notebooks" if (REPO / "notebooks").is_dir() else Path.cwd())


class Execed(Exception):
    """Raised by the fake ``os.execv``: the real one never returns."""


def test_lab_execs_jupyter_after_the_java_check(monkeypatch):
    calls = []

    def fake_execv(path, argv):
        calls.append(argv)
        raise Execed

    monkeypatch.setattr(cli, "require_java", lambda: calls.append("java"))
    monkeypatch.setattr(cli.os, "execv", fake_execv)
    with pytest.raises(Execed):
        cli.main(["lab", "--", "--no-browser"])
    assert calls[0] == "java"
    assert calls[1][:4] == [sys.executable, "-m", "jupyter", "lab"]
    assert calls[1][-1] == "--no-browser"


def test_test_runs_pytest_in_the_repository(monkeypatch):
    calls = []
    monkeypatch.setattr(cli, "require_java", lambda: None)
    monkeypatch.setattr(cli, "ensure_chromium", lambda: "/opt/chromium")

    def fake_run(command, **kwargs):
        calls.append((command, kwargs))
        return subprocess.CompletedProcess(command, 3)

    monkeypatch.setattr(cli.subprocess, "run", fake_run)
    archives = []
    monkeypatch.setattr(cli, "class_archive_first", lambda java: archives.append("made first"))
    assert cli.main(["test", "tests/test_cli.py", "-x"]) == 3
    assert archives == []  # a run of named tests starts few JVMs: no archive first
    calls.clear()
    assert cli.main(["test", "-m", "not browser", "-x"]) == 3
    assert archives == ["made first"]  # a suite-wide run: the archive first, for all its JVMs
    [(command, kwargs)] = calls
    assert command == [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder", "-m", "not browser", "-x"]
    assert kwargs["cwd"] == REPO
    assert kwargs["env"]["WORKBENCH_CHROMIUM"] == "/opt/chromium"


def test_quick_runs_the_everyday_tier_without_chromium(monkeypatch):
    calls = []
    monkeypatch.setattr(cli, "require_java", lambda: None)
    monkeypatch.setattr(cli, "ensure_chromium", lambda: pytest.fail("the quick tier needs no Chromium"))
    monkeypatch.setattr(cli.subprocess, "run", lambda command, **kw: calls.append(command) or
                        subprocess.CompletedProcess(command, 0))
    assert cli.main(["test", "--quick", "-x"]) == 0
    assert calls == [[sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder",
                      "-m", "not browser and not cluster and not kernel", "tests", "-x"]]


@pytest.mark.parametrize("extra", [["-n", "0"], ["-n0"], ["--numprocesses=3"], ["-p", "no:xdist"]])
def test_an_explicit_worker_choice_is_kept(extra):
    assert cli.pytest_command(extra)[3:] == extra


def test_the_quick_tier_is_selected_by_markers_that_exist():
    """Every marker the quick tier names is registered, so the selection cannot silently match all."""
    with open(REPO / "pyproject.toml", "rb") as file:
        registered = {m.split(":")[0] for m in tomllib.load(file)["tool"]["pytest"]["ini_options"]["markers"]}
    named = set(re.findall(r"not (\w+)", cli.QUICK_ARGS[1]))
    assert named == {"browser", "cluster", "kernel"} and named <= registered


# --- Chromium for the browser tests ----------------------------------------------------------


def test_workbench_chromium_is_honoured(tmp_path):
    chromium = tmp_path / "chrome"
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    assert cli.find_chromium({"WORKBENCH_CHROMIUM": str(chromium)}) == str(chromium)
    assert cli.ensure_chromium({"WORKBENCH_CHROMIUM": str(chromium)}) == str(chromium)


def test_missing_chromium_without_root_says_how_to_install(monkeypatch):
    monkeypatch.setattr(cli, "find_chromium", lambda environ=None: None)
    with pytest.raises(cli.CliError) as raised:
        cli.ensure_chromium({}, as_root=False, apt_get="/usr/bin/apt-get")
    message = str(raised.value)
    assert "\n" not in message
    assert "sudo apt-get install chromium" in message and "WORKBENCH_CHROMIUM=/path/to/chromium" in message


def test_missing_chromium_as_root_is_installed_with_apt(monkeypatch, capsys):
    installed = []
    monkeypatch.setattr(cli, "find_chromium", lambda environ=None: "/usr/bin/chromium" if installed else None)

    def fake_run(command, **kwargs):
        installed.append(command)
        assert kwargs["env"]["DEBIAN_FRONTEND"] == "noninteractive"
        return subprocess.CompletedProcess(command, 0, "", "")

    assert cli.ensure_chromium({}, as_root=True, apt_get="apt-get", run=fake_run) == "/usr/bin/chromium"
    assert installed == [["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]]
    assert capsys.readouterr().out.count("\n") == 1


def test_failed_apt_install_is_one_clear_line(monkeypatch):
    monkeypatch.setattr(cli, "find_chromium", lambda environ=None: None)

    def failing_run(command, **kwargs):
        return subprocess.CompletedProcess(command, 100, "", "E: Unable to locate package chromium\n")

    with pytest.raises(cli.CliError, match=r"apt-get update -qq` failed \(exit 100\)"):
        cli.ensure_chromium({}, as_root=True, apt_get="apt-get", run=failing_run)
