"""The class data archive: made once in the background, then mapped by every local session's JVM.

The scripts run in processes of their own with a private cache folder (``XDG_CACHE_HOME``),
so that they start their own JVM and make their own archive; whether a JVM maps the archive
is read from its memory map (``/proc/PID/maps``), as the workbench itself checks it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyspark
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


def a_noted_archive(folder: Path, home: Path, java: str = "/usr/bin/java") -> Path:
    """A stand-in archive in ``folder`` with the note of a Spark installation at ``home`` (made if missing, then removed)."""
    made = not home.exists()
    (home / "jars").mkdir(parents=True, exist_ok=True)
    (home / "jars" / "spark-core.jar").write_bytes(b"jar")
    archive = folder / class_archive.archive_path(java, "17.0.15", home=home).name
    folder.mkdir(parents=True, exist_ok=True)
    archive.write_bytes(class_archive.DYNAMIC_MAGIC)
    assert class_archive.write_note(archive, java, "17.0.15", home=home) == archive.with_suffix(".json")
    if made:
        shutil.rmtree(home)
    return archive


def the_archive(cache: Path) -> Path:
    java = require_java()
    return class_archive.archive_path(java.path, java.version, {"XDG_CACHE_HOME": str(cache)})


@pytest.mark.kernel
def test_the_first_session_makes_the_archive_in_the_background_and_later_ones_map_it(tmp_path):
    archive = the_archive(tmp_path)
    # An archive of a virtualenv deleted since: making a new archive removes it.
    gone = a_noted_archive(archive.parent, tmp_path / "deleted-venv" / "pyspark")
    first = start_a_session(tmp_path)
    assert not any(str(tmp_path) in path for path in first["mapped"])
    # The recording runs on its own, not as a child of the session's process.
    assert not any("_class_archive" in command for command in first["children"]), first["children"]
    wait_for(lambda: archive.exists() and not archive.with_suffix(".lock").exists(), 300,
             text=lambda: f"the archive after the first session: {class_archive.status(archive)}")
    # No lock, tmp or failure left; the note says what the archive was made for; the gone one is gone.
    note = archive.with_suffix(".json")
    assert sorted(p.name for p in archive.parent.iterdir()) == sorted([archive.name, note.name]), gone
    made_for = json.loads(note.read_text())
    assert made_for["spark_home"] == str(Path(pyspark.__file__).parent.resolve())
    assert made_for["java"] == os.path.realpath(require_java().path)
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


def test_archives_of_installations_that_are_gone_are_removed_and_the_others_kept(tmp_path):
    folder = tmp_path / "archives"
    java = require_java()
    live = folder / class_archive.archive_path(java.path, java.version).name  # this installation's
    folder.mkdir()
    live.write_bytes(class_archive.DYNAMIC_MAGIC)
    assert class_archive.write_note(live, java.path, java.version) == live.with_suffix(".json")
    assert class_archive.write_note(folder / "spark-other.jsa", java.path, java.version) is None  # not its name
    other_venv = tmp_path / "other-venv" / "pyspark"
    other_venv.mkdir(parents=True)
    kept = a_noted_archive(folder, other_venv)  # another virtualenv, still there
    deleted = a_noted_archive(folder, tmp_path / "deleted-venv" / "pyspark")
    deleted.with_suffix(".failed").write_text("RuntimeError: an older try\n")
    upgraded_home = tmp_path / "upgraded-venv" / "pyspark"
    upgraded_home.mkdir(parents=True)
    upgraded = a_noted_archive(folder, upgraded_home)
    (upgraded_home / "jars" / "spark-core.jar").write_bytes(b"a newer jar")  # pyspark upgraded in place
    no_java = a_noted_archive(folder, other_venv, java=str(tmp_path / "removed-jdk" / "bin" / "java"))
    unnoted_old, unnoted_new = folder / "spark-unnoted-old.jsa", folder / "spark-unnoted-new.jsa"
    for archive in (unnoted_old, unnoted_new):
        archive.write_bytes(class_archive.DYNAMIC_MAGIC)
    month_ago = unnoted_old.stat().st_mtime - class_archive.UNNOTED_AFTER_S - 60
    os.utime(unnoted_old, (month_ago, month_ago))
    orphan_note = folder / "spark-orphan.json"
    orphan_note.write_text("{}")

    removed = class_archive.prune(folder)

    gone = {deleted, deleted.with_suffix(".json"), deleted.with_suffix(".failed"), upgraded,
            upgraded.with_suffix(".json"), no_java, no_java.with_suffix(".json"), unnoted_old, orphan_note}
    assert set(removed) == gone
    assert set(folder.iterdir()) == {live, live.with_suffix(".json"), kept, kept.with_suffix(".json"), unnoted_new}
    assert class_archive.prune(folder) == []


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
