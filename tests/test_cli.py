"""The ``workbench`` command and the Java check, run as real subprocesses where it matters.

The fake ``java`` executables below are shell scripts that print a ``java -version`` banner:
they exercise our discovery and parsing, not Spark.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from workbench import _chromium, cli
from workbench._java import JavaInfo, find_java, java_warning, parse_java_version, require_java

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
NO_JAVA = "no Java 17 or 21 found (Spark 4 needs one)"
JAVA_17 = JavaInfo("/usr/lib/jvm/java-17/bin/java", "17.0.15", 17, "PATH")


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


def test_doctor_with_the_extension_disabled_says_so_and_does_not_fail(tmp_path):
    (tmp_path / "labconfig").mkdir()
    (tmp_path / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"spark-streaming-workbench": True}}))
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "WORKBENCH_MASTER", "SPARK_HOME")}
    done = run_workbench("doctor", env={**env, "JUPYTER_CONFIG_DIR": str(tmp_path)})
    assert re.search(r"^extension   0\.1\.0 disabled \(jupyter labextension enable spark-streaming-workbench\) ",
                     done.stdout, re.M), done.stdout
    info = find_java()
    assert done.returncode == (0 if info is not None and info.supported else 1), done.stdout  # lab starts without it
    assert "the extension's line and Chromium's inform only" in " ".join(run_workbench("doctor", "-h").stdout.split())


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


def test_a_java_spark_4_does_not_support_is_warned_about_not_refused():
    javas = {major: JavaInfo("/usr/bin/java", f"{major}.0.1", major, "PATH") for major in (17, 18, 21, 22, 25)}
    assert all(java.supported for java in javas.values())  # the user may know better
    assert {major: java_warning(java) for major, java in javas.items()} == {
        17: None, 18: "Java 18: Spark 4 supports 17 and 21", 21: None, 22: "Java 22: Spark 4 supports 17 and 21",
        25: "Java 25: Spark 4 supports 17 and 21"}


def test_doctor_warns_about_java_25(tmp_path):
    fake_java(tmp_path / "jdk25", banner("25.0.1"))
    done = run_workbench("doctor", env=env_without_java(JAVA_HOME=str(tmp_path / "jdk25")))
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("java        25.0.1 (")
    assert lines[2] == ("warning     Java 25: Spark 4 supports 17 and 21; if Spark fails to start, point JAVA_HOME "
                        "at one of those")


@pytest.mark.parametrize("command", [["lab"], ["test", "tests/test_cli.py"]])
def test_lab_and_test_warn_about_java_25_in_one_line(monkeypatch, execs, capsys, tmp_path, command):
    java = fake_java(tmp_path / "jdk25", banner("25.0.1"))
    monkeypatch.setattr(cli, "require_java", require_java)  # the real check, on the fake Java 25
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk25"))
    with pytest.raises(Execed):
        cli.main(command)
    assert capsys.readouterr().err.splitlines() == [
        f"workbench: warning: Java 25: Spark 4 supports 17 and 21 (found {java}, from JAVA_HOME); if Spark fails "
        "to start, point JAVA_HOME at a Java 17 or 21"]


@pytest.mark.parametrize(("variable", "url"), [("WORKBENCH_MASTER", "k8s://[::1"), ("SPARK_REMOTE", "sc://[::1"),
                                               ("WORKBENCH_MASTER", "spark://[::1:7077")])
def test_doctor_names_a_url_with_an_unmatched_bracket(variable, url):
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "WORKBENCH_MASTER")}
    done = run_workbench("doctor", env={**env, variable: url})
    assert "Traceback" not in done.stderr and done.returncode == 1
    [line] = [line for line in done.stdout.splitlines() if line.startswith("spark ")]
    assert line.startswith(f"spark       {variable}={url!r} has an unmatched '[': use ")


@pytest.mark.parametrize(("unsafe", "safe"), [
    (["--ip=0.0.0.0"], ["--ip=127.0.0.1"]),
    (["--no-browser", "--ip", "0.0.0.0"], ["--no-browser", "--ip", "localhost"]),
    (["--ServerApp.ip=192.168.1.5"], ["--ServerApp.ip=::1"]),
    (["--ServerApp.ip=::"], ["--port=8899"]),
    (["--IdentityProvider.token="], ["--IdentityProvider.token=s3cret"]),
    (["--ServerApp.token="], ["--ServerApp.token=s3cret"]),
    (["--ServerApp.disable_check_xsrf=True"], ["--ServerApp.disable_check_xsrf=False"]),
    (["--ServerApp.allow_origin=*"], ["--ServerApp.allow_origin="]),
    (["--ServerApp.allow_origin_pat=.*"], ["--ServerApp.allow_origin_pat="]),
])
def test_lab_refuses_arguments_that_undo_its_safe_defaults(execs, capsys, unsafe, safe):
    assert cli.main(["lab", *unsafe]) == 2
    assert execs == []
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()]
    assert err.startswith(f"workbench: {' '.join(unsafe[-2:] if unsafe[-1] == '0.0.0.0' else unsafe[-1:])} would ")
    assert err.strip().endswith(f"if you really want that, run jupyter lab yourself: jupyter lab {shlex.join(unsafe)}")
    with pytest.raises(Execed):  # the same setting, kept safe, goes to jupyter lab
        cli.main(["lab", *safe])
    [(argv, _, _)] = execs
    assert argv[-len(safe):] == safe


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


DEFAULT_IP, DEFAULT_ROOT = "--ServerApp.ip=127.0.0.1", "--ServerApp.root_dir=/nb"


@pytest.mark.parametrize(("extra", "defaults"), [
    # Jupyter takes one value of each setting ("ip only accepts one value, got 2"): the user's replaces ours.
    (["--ip=127.0.0.1"], [DEFAULT_ROOT]),
    (["--ip=::1"], [DEFAULT_ROOT]),
    (["--ip", "::1", "--no-browser"], [DEFAULT_ROOT]),
    (["--ServerApp.ip=localhost"], [DEFAULT_ROOT]),
    (["--NotebookApp.ip=::1"], [DEFAULT_IP, DEFAULT_ROOT]),  # another setting: ours still binds ServerApp.ip
    (["--notebook-dir=/tmp"], [DEFAULT_IP]),
    (["--notebook-dir", "/tmp"], [DEFAULT_IP]),
    (["--ServerApp.root_dir=/tmp"], [DEFAULT_IP]),
    (["--ServerApp.notebook_dir=/tmp"], [DEFAULT_IP]),
    (["--NotebookApp.notebook_dir", "/tmp"], [DEFAULT_IP]),
    (["/some/other.ipynb"], [DEFAULT_IP]),  # "root_dir and file_to_run are incompatible"
    (["--no-browser", "/some/folder"], [DEFAULT_IP]),  # a flag takes no value: the folder is to open
    (["--port", "8899", "--no-browser"], [DEFAULT_IP, DEFAULT_ROOT]),  # 8899 is --port's value, not a file
    (["--ServerApp.open_browser", "False", "--allow-root"], [DEFAULT_IP, DEFAULT_ROOT]),
    (["--ip=::1", "--notebook-dir=/tmp", "--port=8899"], []),
])
def test_the_users_ip_and_root_folder_replace_the_defaults(extra, defaults):
    command = cli.lab_command(extra, root_dir=Path("/nb"), as_root=False)
    assert command == [sys.executable, "-m", "jupyter", "lab", *defaults, *extra]


def local_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_lab_serves_on_the_users_ip_and_root_folder_with_its_token(tmp_path):
    """A real JupyterLab, with the ``--ip`` and ``--notebook-dir`` that Jupyter once refused as second values."""
    if find_java() is None or not find_java().supported:
        pytest.skip("workbench lab needs a Java 17 or newer")
    root, token, port = tmp_path / "root", secrets.token_hex(16), local_port()
    root.mkdir()
    (root / "asked-for.txt").write_text("")
    folders = {name: tmp_path / name.lower() for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "TMPDIR")}
    for folder in folders.values():
        folder.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_TOKEN", "JUPYTER_CONFIG_PATH")}
    env.update({name: str(folder) for name, folder in folders.items()}, WORKBENCH_CLASS_ARCHIVE="0")
    with open(tmp_path / "lab.log", "wb") as log:
        lab = subprocess.Popen(
            [sys.executable, "-m", "workbench", "lab", "--ip=127.0.0.1", f"--port={port}", "--no-browser",
             f"--notebook-dir={root}", f"--IdentityProvider.token={token}", "--ServerApp.port_retries=0"],
            cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
    try:
        def contents(headers: dict[str, str]) -> tuple[int, bytes]:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/api/contents", headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return response.status, response.read()
            except urllib.error.HTTPError as error:
                return error.code, b""

        deadline = time.monotonic() + 120
        while True:
            assert lab.poll() is None, (tmp_path / "lab.log").read_text()[-3000:]
            assert time.monotonic() < deadline, (tmp_path / "lab.log").read_text()[-3000:]
            try:
                status, _ = contents({})
                break
            except OSError:  # not listening yet
                time.sleep(0.2)
        assert status == 403  # token authentication is on
        status, body = contents({"Authorization": f"token {token}"})
        assert status == 200
        assert [item["name"] for item in json.loads(body)["content"]] == ["asked-for.txt"]
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        lab.wait(60)


def write_config(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


@pytest.mark.parametrize(("name", "text", "setting"), [
    ("jupyter_server_config.json", '{"IdentityProvider": {"token": ""}}', "IdentityProvider.token=''"),
    ("jupyter_server_config.py", 'c.ServerApp.token = ""', "ServerApp.token=''"),
    ("jupyter_notebook_config.json", '{"NotebookApp": {"token": ""}}', "NotebookApp.token=''"),
    ("jupyter_lab_config.py", "c.ServerApp.disable_check_xsrf = True", "ServerApp.disable_check_xsrf=True"),
    ("jupyter_server_config.json", '{"ServerApp": {"allow_origin": "*"}}', "ServerApp.allow_origin='*'"),
    ("jupyter_lab_config.json", '{"ServerApp": {"allow_origin_pat": ".*"}}', "ServerApp.allow_origin_pat='.*'"),
    ("jupyter_config.py", 'c.ServerApp.token = ""', "ServerApp.token=''"),  # the file every Jupyter app reads
])
def test_lab_refuses_unsafe_settings_of_jupyters_config_files(execs, capsys, tmp_path, name, text, setting):
    config = write_config(tmp_path / "jupyter-config", name, text)
    assert cli.main(["lab", "--no-browser"]) == 2
    assert execs == []
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()]
    assert err.startswith(f"workbench: {setting} in {config} would ")
    assert err.strip().endswith("which workbench lab does not do; remove it there, or if you really want that, "
                                "run jupyter lab yourself: jupyter lab --no-browser")


@pytest.mark.parametrize(("text", "extra"), [
    ('{"IdentityProvider": {"token": ""}, "PasswordIdentityProvider": {"hashed_password": "argon2:$x"}}', []),
    ('{"ServerApp": {"token": "", "password": "sha1:x"}}', []),
    ('{"ServerApp": {"ip": "0.0.0.0"}}', []),  # the command line sets the address
    ('{"ServerApp": {"disable_check_xsrf": false, "allow_origin": ""}}', []),
    ('{"IdentityProvider": {"token": ""}}', ["--IdentityProvider.token=s3cret"]),  # the command line wins
    ('{"ServerApp": {"token": ""}}', ["--IdentityProvider.token=s3cret"]),  # whichever spelling gives the token
])
def test_lab_starts_with_safe_settings_in_jupyters_config_files(execs, tmp_path, text, extra):
    write_config(tmp_path / "jupyter-config", "jupyter_server_config.json", text)
    with pytest.raises(Execed):
        cli.main(["lab", *extra])
    [(argv, _, _)] = execs
    assert "--ServerApp.ip=127.0.0.1" in argv


def test_the_config_folder_jupyter_reads_first_wins(execs, capsys, tmp_path, monkeypatch):
    first, last = tmp_path / "first", tmp_path / "jupyter-config"
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(first))  # before the user's folder on Jupyter's path
    write_config(first, "jupyter_server_config.json", '{"IdentityProvider": {"token": "s3cret"}}')
    write_config(last, "jupyter_server_config.json", '{"IdentityProvider": {"token": ""}}')
    with pytest.raises(Execed):
        cli.main(["lab"])
    write_config(first, "jupyter_server_config.json", '{"IdentityProvider": {"token": ""}}')
    write_config(last, "jupyter_server_config.json", '{"IdentityProvider": {"token": "s3cret"}}')
    assert cli.main(["lab"]) == 2
    assert f"IdentityProvider.token='' in {first / 'jupyter_server_config.json'} would " in capsys.readouterr().err


def test_a_config_file_given_to_jupyter_lab_is_read_in_place_of_the_servers_own(execs, capsys, tmp_path):
    write_config(tmp_path / "jupyter-config", "jupyter_server_config.json", '{"IdentityProvider": {"token": ""}}')
    mine = write_config(tmp_path / "mine", "lab.json", '{"ServerApp": {"disable_check_xsrf": true}}')
    assert cli.main(["lab", f"--config={mine}"]) == 2  # Jupyter reads it, and not jupyter_server_config
    assert f"ServerApp.disable_check_xsrf=True in {mine} would " in capsys.readouterr().err
    write_config(tmp_path / "mine", "lab.json", '{"ServerApp": {"disable_check_xsrf": false}}')
    with pytest.raises(Execed):
        cli.main(["lab", "--config", str(mine)])


def test_an_empty_token_with_a_password_is_safe_on_the_command_line_too(execs):
    with pytest.raises(Execed):
        cli.main(["lab", "--IdentityProvider.token=", "--PasswordIdentityProvider.hashed_password=argon2:$x"])


def test_lab_opens_the_notebooks_folder():
    assert cli.notebooks_dir() == (REPO / "notebooks" if (REPO / "notebooks").is_dir() else Path.cwd())


class Execed(Exception):
    """Raised by the fake ``os.execve``: the real one never returns."""


@pytest.fixture
def execs(monkeypatch, tmp_path):
    """What ``workbench lab`` or ``test`` replaces itself with: (argv, env, folder) of each fake ``os.execve``.

    Java 17 is found, no class archive is made, Jupyter's user config is ``tmp_path/jupyter-config``,
    and the caller's folder is ``tmp_path/here`` (put back afterwards: ``workbench test`` changes
    into the repository before it execs).
    """
    calls = []

    def fake_execve(path, argv, env):
        assert path == argv[0]
        calls.append((argv, dict(env), Path.cwd()))
        raise Execed

    monkeypatch.setattr(cli, "require_java", lambda: JAVA_17)
    monkeypatch.setattr(cli.os, "execve", fake_execve)
    monkeypatch.setenv("WORKBENCH_CLASS_ARCHIVE", "0")
    # The user's own Jupyter config (which `workbench lab` reads) stays out of the tests.
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter-config"))
    monkeypatch.delenv("JUPYTER_CONFIG_PATH", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)  # with one, no class archive is made first
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    return calls


def test_lab_execs_jupyter_after_the_java_check(monkeypatch, execs):
    checked = []
    monkeypatch.setattr(cli, "require_java", lambda: checked.append("java") or JAVA_17)
    with pytest.raises(Execed):
        cli.main(["lab", "--", "--no-browser"])
    [(argv, env, _)] = execs
    assert checked == ["java"]
    assert argv[:4] == [sys.executable, "-m", "jupyter", "lab"]
    assert argv[-1] == "--no-browser"


def test_test_runs_pytest_in_the_repository(monkeypatch, execs):
    monkeypatch.setattr(cli, "ensure_chromium", lambda: "/opt/chromium")
    archives = []
    monkeypatch.setattr(cli, "class_archive_first", lambda java: archives.append("made first"))
    with pytest.raises(Execed):
        cli.main(["test", "tests/test_cli.py", "-x"])
    assert archives == []  # a run of named tests starts few JVMs: no archive first
    with pytest.raises(Execed):
        cli.main(["test", "-x"])
    assert archives == ["made first"]  # a suite-wide run: the archive first, for all its JVMs
    argv, env, folder = execs[-1]
    assert argv == [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder", "-x"]
    assert folder == REPO
    assert env["WORKBENCH_CHROMIUM"] == "/opt/chromium"


def test_quick_runs_the_everyday_tier_without_chromium(monkeypatch, execs):
    monkeypatch.setattr(cli, "ensure_chromium", lambda: pytest.fail("the quick tier needs no Chromium"))
    with pytest.raises(Execed):
        cli.main(["test", "--quick", "-x"])
    assert [argv for argv, _, _ in execs] == [[
        sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder",
        "-m", "not browser and not cluster and not kernel and not slow", "tests", "-x"]]


def test_chromium_is_checked_only_when_browser_tests_can_run(monkeypatch, execs):
    monkeypatch.delenv("WORKBENCH_CHROMIUM", raising=False)
    monkeypatch.setattr(cli, "ensure_chromium", lambda: "/opt/chromium")
    monkeypatch.setattr(cli, "class_archive_first", lambda java: None)
    runs = {  # the arguments of `workbench test`, and whether the run can select browser tests
        "": True,
        "-m 'not browser'": False,
        "-m 'not spark and not browser'": False,
        "-m 'not browser or spark'": True,
        "--quick": False,
        "--quick -m browser": True,  # the last -m wins
        "tests/test_cli.py tests/test_safety.py::test_nothing_listens_outside_loopback_and_folders_are_private": False,
        "tests/test_cli.py tests/test_browser.py::test_quickstart_in_jupyterlab": True,
        "--ignore tests/test_browser.py tests/test_cli.py": False,
        "tests": True,
    }
    for args in runs:
        with pytest.raises(Execed):
            cli.main(["test", *shlex.split(args)])
    assert {args: "WORKBENCH_CHROMIUM" in env for args, (_, env, _) in zip(runs, execs)} == runs


@pytest.mark.parametrize("module", ["pytest", "xdist"])
def test_test_without_the_test_extra_says_how_to_install_it(monkeypatch, capsys, module):
    # As if not installed: importlib finds no module whose sys.modules entry is None.
    monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setattr(cli, "require_java", lambda: pytest.fail("the packages come first"))
    assert cli.main(["test"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()]
    assert {"pytest": "pytest", "xdist": "pytest-xdist"}[module] in err
    assert err.strip().endswith("install the test extra: pip install -e '.[test]'")
    with open(REPO / "pyproject.toml", "rb") as file:
        assert any(dep.startswith("pytest-xdist") for dep in tomllib.load(file)["project"]["optional-dependencies"]["test"])


def test_the_users_spark_settings_stay_out_of_the_test_run(monkeypatch, execs, capsys):
    chosen = {"SPARK_REMOTE": "sc://spark.example.com:15002", "WORKBENCH_MASTER": "spark://spark.example.com:7077",
              "WORKBENCH_CHECKPOINT_ROOT": "s3a://bucket/ckpt", "PYSPARK_SUBMIT_ARGS": "--master yarn pyspark-shell",
              "SPARK_HOME": "/opt/spark-3.5.1"}
    for name, value in chosen.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(Execed):
        cli.main(["test", "tests/test_cli.py"])
    [(_, env, _)] = execs
    assert not set(chosen) & set(env)
    assert capsys.readouterr().err.splitlines() == [
        "workbench: ignoring SPARK_REMOTE, WORKBENCH_MASTER, WORKBENCH_CHECKPOINT_ROOT, PYSPARK_SUBMIT_ARGS, "
        "SPARK_HOME for the test run (the suite starts Spark of its own)"]


def test_quick_with_named_tests_runs_only_those(execs):
    with pytest.raises(Execed):
        cli.main(["test", "--quick", "-n", "0", "tests/test_cli.py"])
    [(argv, _, _)] = execs
    assert argv[3:] == ["-m", "not browser and not cluster and not kernel and not slow", "-n", "0", "tests/test_cli.py"]


def test_paths_are_read_from_the_callers_folder(execs, tmp_path):
    mine = tmp_path / "here" / "test_mine.py"
    mine.write_text("def test_mine():\n    pass\n")
    with pytest.raises(Execed):
        cli.main(["test", "-n", "0", "test_mine.py::test_mine", "tests/test_cli.py"])
    [(argv, _, folder)] = execs
    assert folder == REPO  # where pytest runs: the suite's configuration
    assert argv[3:] == ["-n", "0", f"{mine}::test_mine", "tests/test_cli.py"]


def test_the_class_archive_comes_first_only_for_runs_that_start_jvms(monkeypatch, execs):
    monkeypatch.setattr(cli, "ensure_chromium", lambda: "/opt/chromium")
    archives = []
    monkeypatch.setattr(cli, "class_archive_first", lambda java: archives.append(True))
    runs = {  # the arguments of `workbench test`, and whether the archive is made first
        "": True,
        "-x": True,
        "-m 'not browser'": True,
        "-m 'not spark or not browser'": True,
        "-m 'not spark and not browser'": True,  # kernel and cluster tests start JVMs of their own
        f"-m '{cli.JVM_FREE}'": False,
        "--co": False,
        "--collect-only -q": False,
        "-- -h": False,
        "-- --help": False,
        "--version": False,
        "--quick": False,
        "tests/test_cli.py": False,
    }
    made = {}
    for args in runs:
        archives.clear()
        with pytest.raises(Execed):
            cli.main(["test", *shlex.split(args)])
        made[args] = archives == [True]
    assert made == runs
    monkeypatch.setenv("SPARK_HOME", "/opt/spark")  # the archive would be that Spark's, not the tests'
    with pytest.raises(Execed):
        cli.main(["test"])
    assert archives == []


def test_path_option_values_are_read_from_the_callers_folder(execs, tmp_path):
    here = tmp_path / "here"
    for name in ("skip_me.py", "test_mine.py", "mine.ini"):
        (here / name).write_text("")
    with pytest.raises(Execed):
        cli.main(["test", "-n", "0", "--junitxml=report.xml", "--basetemp", "scratch", "--log-file=run.log",
                  "--ignore", "skip_me.py", "--deselect", "test_mine.py::test_x", "-c", "mine.ini",
                  "--ignore=tests/test_browser.py", "--rootdir", ".", "--junitxml", "/abs/report.xml",
                  "tests/test_cli.py"])
    [(argv, _, folder)] = execs
    assert folder == REPO
    assert argv[3:] == [
        "-n", "0", f"--junitxml={here / 'report.xml'}", "--basetemp", str(here / "scratch"),
        f"--log-file={here / 'run.log'}", "--ignore", str(here / "skip_me.py"),
        "--deselect", f"{os.path.relpath(here / 'test_mine.py', REPO)}::test_x", "-c", str(here / "mine.ini"),
        "--ignore=tests/test_browser.py",  # not in the caller's folder: the repository's, where pytest runs
        "--rootdir", str(here), "--junitxml", "/abs/report.xml", "tests/test_cli.py"]


def test_a_test_deselected_from_another_folder_does_not_run():
    # pytest matches --deselect against its test ids, relative to the repository root: an
    # absolute path (made so as a path read from the caller's folder) deselected nothing.
    done = subprocess.run([sys.executable, "-m", "workbench", "test", "--co", "-q", "-n", "0",
                           "--deselect", "test_cli.py::test_help", "test_cli.py"],
                          cwd=REPO / "tests", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "tests/test_cli.py::test_help" not in done.stdout and "1 deselected" in done.stdout, done.stdout[-2000:]


def wait_for_file(path: Path, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)


def ctrl_c(process: subprocess.Popen) -> subprocess.CompletedProcess:
    """Ctrl-C as a terminal sends it (SIGINT to the foreground process group), then the process's end."""
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_ctrl_c_lets_pytest_end_the_run_and_clean_up(tmp_path):
    """``workbench test`` becomes pytest: a Ctrl-C ends the run as pytest ends it, tear-downs done."""
    fake_java(tmp_path / "jdk", banner("17.0.15"))
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "test_slow_tear_down.py").write_text(textwrap.dedent("""
        import time
        from pathlib import Path

        def test_interrupted():
            Path(__file__).with_name("started").touch()
            try:
                time.sleep(60)
            finally:
                time.sleep(1)  # a tear-down that takes a while, as ending a JupyterLab server does
                Path(__file__).with_name("cleaned up").touch()
        """))
    running = subprocess.Popen(
        [sys.executable, "-m", "workbench", "test", "-n", "0", "-p", "no:cacheprovider", "test_slow_tear_down.py"],
        cwd=tmp_path / "user", env=env_without_java(JAVA_HOME=str(tmp_path / "jdk")), start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_file(tmp_path / "user" / "started", running)
    done = ctrl_c(running)
    assert (tmp_path / "user" / "cleaned up").exists(), done.stdout[-2000:] + done.stderr[-2000:]
    assert done.returncode == 2 and "KeyboardInterrupt" in done.stdout  # pytest's own account of it


def test_ctrl_c_during_the_chromium_install_lets_apt_get_finish(tmp_path):
    apt_get = tmp_path / "apt-get"
    apt_get.write_text(textwrap.dedent("""\
        #!/bin/sh
        trap 'kill $child; sleep 1; : > "$0.finished"; exit 130' INT
        : > "$0.started"
        sleep 60 & child=$!
        wait $child
        """))
    apt_get.chmod(0o755)
    code = ("import sys; from workbench import _chromium; _chromium.find_chromium = lambda environ=None: None; "
            "_chromium.ensure_chromium({}, as_root=True, apt_get=sys.argv[1])")
    running = subprocess.Popen([sys.executable, "-c", code, str(apt_get)], start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_file(tmp_path / "apt-get.started", running)
    done = ctrl_c(running)
    assert (tmp_path / "apt-get.finished").exists(), done.stderr  # not killed halfway
    assert done.returncode != 0 and "KeyboardInterrupt" in done.stderr


def test_ctrl_c_while_the_class_archive_is_made_leaves_no_lock_or_temporary_file(tmp_path):
    # The recorder here takes the claim, writes its temporary file and takes a second to end,
    # as the real one does when its JVM ends (workbench/spark/class_recording.py).
    recorder = tmp_path / "recorder.py"
    recorder.write_text(textwrap.dedent("""
        import sys, time
        from pathlib import Path
        from workbench._class_archive import claimed

        archive = Path(sys.argv[1])
        with claimed(archive) as tmp:
            tmp.write_bytes(b"half an archive")
            archive.with_name("started").touch()
            try:
                time.sleep(60)
            finally:
                time.sleep(1)
        """))
    archive = tmp_path / "archives" / "spark-0123456789abcdef0123.jsa"
    code = ("import sys; from pathlib import Path; from workbench import _class_archive as archives; "
            "archives._recorder_command = lambda archive: [sys.executable, sys.argv[2], str(archive)]; "
            "archives.record_now(Path(sys.argv[1]))")
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_CLASS_ARCHIVE"}
    running = subprocess.Popen([sys.executable, "-c", code, str(archive), str(recorder)], start_new_session=True,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_file(archive.with_name("started"), running)
    done = ctrl_c(running)
    assert "KeyboardInterrupt" in done.stderr
    assert sorted(path.name for path in archive.parent.iterdir()) == ["started"]


@pytest.mark.parametrize("extra", [["-n", "0"], ["-n0"], ["--numprocesses=3"], ["-p", "no:xdist"]])
def test_an_explicit_worker_choice_is_kept(extra):
    assert cli.pytest_command(extra)[3:] == extra


def test_the_quick_tier_is_selected_by_markers_that_exist():
    """Every marker the quick tier names is registered, so the selection cannot silently match all."""
    with open(REPO / "pyproject.toml", "rb") as file:
        registered = {m.split(":")[0] for m in tomllib.load(file)["tool"]["pytest"]["ini_options"]["markers"]}
    named = set(re.findall(r"not (\w+)", cli.QUICK_ARGS[1]))
    assert named == {"browser", "cluster", "kernel", "slow"} and named <= registered


# --- Chromium for the browser tests ----------------------------------------------------------


def test_workbench_chromium_is_honoured(tmp_path):
    chromium = tmp_path / "chrome"
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    assert _chromium.find_chromium({"WORKBENCH_CHROMIUM": str(chromium)}) == str(chromium)
    assert _chromium.ensure_chromium({"WORKBENCH_CHROMIUM": str(chromium)}) == str(chromium)


def test_missing_chromium_without_root_says_how_to_install(monkeypatch):
    monkeypatch.setattr(_chromium, "find_chromium", lambda environ=None: None)
    with pytest.raises(_chromium.ChromiumMissing) as raised:
        _chromium.ensure_chromium({}, as_root=False, apt_get="/usr/bin/apt-get")
    message = str(raised.value)
    assert "\n" not in message
    assert "sudo apt-get install chromium" in message and "WORKBENCH_CHROMIUM=/path/to/chromium" in message
    assert f"{sys.executable} -m playwright install chromium" in message  # this Python's: a venv's need not be on PATH


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("name", ["chromium-browser", "google-chrome", "google-chrome-stable"])
def test_chromium_is_found_by_its_other_names(monkeypatch, tmp_path, name):
    monkeypatch.setattr(_chromium, "SYSTEM_CHROMIUM", str(tmp_path / "no-such-chromium"))
    found = executable(tmp_path / "bin" / name)
    assert _chromium.find_chromium({"PATH": str(tmp_path / "bin"), "PLAYWRIGHT_BROWSERS_PATH": str(tmp_path)}) == str(found)


def test_chromium_downloaded_by_playwright_is_found(monkeypatch, tmp_path):
    monkeypatch.setattr(_chromium, "SYSTEM_CHROMIUM", str(tmp_path / "no-such-chromium"))
    executable(tmp_path / "ms-playwright" / "chromium-1187" / "chrome-linux" / "chrome")
    newest = executable(tmp_path / "ms-playwright" / "chromium-1200" / "chrome-linux64" / "chrome")
    executable(tmp_path / "ms-playwright" / "chromium_headless_shell-1200" / "chrome-linux64" / "chrome")
    environ = {"PATH": str(tmp_path / "empty"), "XDG_CACHE_HOME": str(tmp_path)}
    assert _chromium.find_chromium(environ) == str(newest)
    assert _chromium.find_chromium({**environ, "PLAYWRIGHT_BROWSERS_PATH": str(tmp_path / "other")}) is None


def test_a_relative_workbench_chromium_reaches_the_tests_absolute(monkeypatch, execs, tmp_path):
    chromium = executable(tmp_path / "here" / "bin" / "chrome")
    monkeypatch.setenv("WORKBENCH_CHROMIUM", "bin/chrome")
    assert _chromium.find_chromium() == str(chromium)
    with pytest.raises(Execed):
        cli.main(["test", "tests/test_browser.py"])  # run from the repository root
    [(_, env, _)] = execs
    assert env["WORKBENCH_CHROMIUM"] == str(chromium)


def test_missing_chromium_as_root_is_installed_with_apt(monkeypatch, capsys):
    installed = []
    monkeypatch.setattr(_chromium, "find_chromium", lambda environ=None: "/usr/bin/chromium" if installed else None)

    def fake_run(command, **kwargs):
        installed.append(command)
        assert kwargs["env"]["DEBIAN_FRONTEND"] == "noninteractive"
        return subprocess.CompletedProcess(command, 0, "", "")

    assert _chromium.ensure_chromium({}, as_root=True, apt_get="apt-get", run=fake_run) == "/usr/bin/chromium"
    assert installed == [["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]]
    assert capsys.readouterr().out.count("\n") == 1


def test_failed_apt_install_is_one_clear_line(monkeypatch):
    monkeypatch.setattr(_chromium, "find_chromium", lambda environ=None: None)

    def failing_run(command, **kwargs):
        return subprocess.CompletedProcess(command, 100, "", "E: Unable to locate package chromium\n")

    with pytest.raises(_chromium.ChromiumMissing, match=r"apt-get update -qq` failed \(exit 100\)"):
        _chromium.ensure_chromium({}, as_root=True, apt_get="apt-get", run=failing_run)
