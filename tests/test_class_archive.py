"""The class data archive: made once in the background, then mapped by every local session's JVM.

The scripts run in processes of their own with a private cache folder (``XDG_CACHE_HOME``),
so that they start their own JVM and make their own archive; whether a JVM maps the archive
is read from its memory map (``/proc/PID/maps``), as the workbench itself checks it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import _class_archive as class_archive
from workbench._java import require_java

from tests.helpers import wait_for

#: Starts a local session; prints the archives its JVM maps and the processes this one started.
SCRIPT = """
import json, psutil, workbench
from pyspark import SparkContext
workbench.session()
jvm = SparkContext._gateway.proc.pid
with open(f"/proc/{jvm}/maps") as maps:
    mapped = sorted({line.split()[-1] for line in maps if line.rstrip().endswith(".jsa")})
others = []
for p in psutil.Process().children(recursive=True):
    try:
        if p.pid != jvm:
            others.append(" ".join(p.cmdline()))
    except psutil.Error:  # ended meanwhile (a zombie not yet reaped has no command line)
        pass
print(json.dumps({"mapped": mapped, "children": others}))
"""


def start_a_session(cache: Path, **env: str) -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, cwd=cache,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache), **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def the_archive(cache: Path) -> Path:
    java = require_java()
    return class_archive.archive_path(java.path, java.version, {"XDG_CACHE_HOME": str(cache)})


@pytest.mark.kernel
def test_the_first_session_makes_the_archive_in_the_background_and_later_ones_map_it(tmp_path):
    archive = the_archive(tmp_path)
    first = start_a_session(tmp_path)
    assert not any(str(tmp_path) in path for path in first["mapped"])
    # The recording runs on its own, not as a child of the session's process.
    assert not any("_class_archive" in command for command in first["children"]), first["children"]
    wait_for(lambda: archive.exists() and not archive.with_suffix(".lock").exists(), 300,
             text=lambda: f"the archive after the first session: {class_archive.status(archive)}")
    assert sorted(p.name for p in archive.parent.iterdir()) == [archive.name]  # no lock, tmp or failure left
    assert class_archive.status(archive).startswith(f"{archive} (")
    assert class_archive.is_archive(archive)  # a JVM with another class path leaves it in place

    assert str(archive) in start_a_session(tmp_path)["mapped"]
    assert str(archive) not in start_a_session(tmp_path, WORKBENCH_CLASS_ARCHIVE="0")["mapped"]


@pytest.mark.kernel
def test_an_archive_the_jvm_ignores_is_put_aside_and_the_session_starts(tmp_path):
    archive = the_archive(tmp_path)
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"not a class data archive" * 1000)
    assert start_a_session(tmp_path)["mapped"] is not None
    assert not archive.exists()
    assert "the Spark JVM ignored it (not a class data archive)" in archive.with_suffix(".failed").read_text()
    assert class_archive.status(archive).startswith("not made: the Spark JVM ignored it")
    assert not list(tmp_path.glob("hs_err_pid*"))  # no JVM crashed on it


def test_a_session_with_its_own_class_path_starts_without_the_archive(tmp_path):
    archive = tmp_path / "spark-x.jsa"
    archive.write_bytes(b"")
    assert class_archive.archive_options({}, archive) == f"-XX:SharedArchiveFile={archive} -Xlog:cds*=off"
    for key in class_archive.CLASS_PATH_SETTINGS:
        assert class_archive.archive_options({key: "extra.jar"}, archive) is None
        assert not class_archive.record_in_background(tmp_path / "other.jsa", {key: "extra.jar"})
    assert class_archive.archive_options({"spark.driver.extraJavaOptions": "-Xshare:off"}, archive) is None
    assert class_archive.archive_options({}, tmp_path / "missing.jsa") is None


def test_a_failed_recording_is_tried_again_a_day_later(tmp_path):
    archive = tmp_path / "spark-x.jsa"
    failed = archive.with_suffix(".failed")
    failed.write_text("RuntimeError: workbench: could not read the version of /usr/bin/java\n")
    assert not class_archive.record_in_background(archive, {})  # failed just now: not yet
    assert class_archive.status(archive).startswith("not made: RuntimeError: workbench: could not read")
    day_ago = failed.stat().st_mtime - class_archive.RETRY_AFTER_S - 60
    os.utime(failed, (day_ago, day_ago))
    assert class_archive._may_record(archive)  # claimed: the recording would start now
    assert not failed.exists() and archive.with_suffix(".lock").exists()
    class_archive._release(archive)


def test_the_archive_follows_java_and_the_spark_installation():
    environ = {"XDG_CACHE_HOME": "/cache"}
    one = class_archive.archive_path("/usr/bin/java", "17.0.15", environ)
    assert one.parent == Path("/cache/spark-streaming-workbench/class-archives")
    assert one == class_archive.archive_path("/usr/bin/java", "17.0.15", environ)
    assert one != class_archive.archive_path("/usr/bin/java", "21.0.4", environ)


def test_off_means_nothing_is_read_or_made(tmp_path, monkeypatch):
    monkeypatch.setenv(class_archive.ENV, "0")
    archive = tmp_path / "spark-x.jsa"
    archive.write_bytes(b"")
    assert class_archive.archive_options({}, archive) is None
    assert not class_archive.record_in_background(tmp_path / "other.jsa", {})
    assert class_archive.status(archive) == "off (WORKBENCH_CLASS_ARCHIVE=0)"
