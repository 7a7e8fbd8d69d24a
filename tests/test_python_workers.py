"""Spark's Python workers import the installed pyspark, not the copy in pyspark's zip (workbench/spark/python_workers.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.spark.python_workers import WORKERS_FOLDER, script_text, use_for_workers, worker_python


def _run(executable: str, pythonpath: str | None, code: str) -> str:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run([executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def test_the_script_drops_the_zip_and_keeps_the_rest_of_the_path(tmp_path):
    # A zip path with a space and a quote: the script's patterns are literal.
    zip_path = str(tmp_path / "spark's home" / "pyspark.zip")
    script = tmp_path / "python.sh"
    script.write_text(script_text(zip_path, sys.executable))
    script.chmod(0o755)
    show = "import os, sys; print(os.environ.get('PYTHONPATH'), sys.executable == %r, sys.version)" % sys.executable
    expected = f"True {sys.version}"
    assert _run(str(script), f"{zip_path}:/a:/b c", show) == f"/a:/b c {expected}"
    assert _run(str(script), zip_path, show) == f"None {expected}"
    assert _run(str(script), None, show) == f"None {expected}"
    # Spark gives some workers the zip a second time further on: every one goes.
    assert _run(str(script), f"{zip_path}:/a:{zip_path}:/b*", show) == f"/a:/b* {expected}"
    # A path that only starts like it stays.
    assert _run(str(script), f"{zip_path}x:/a", show) == f"{zip_path}x:/a {expected}"


def test_workers_started_as_spark_starts_them_import_the_installed_pyspark(tmp_path):
    import pyspark

    home = Path(pyspark.__file__).parent
    spark_path = os.pathsep.join(str(home / "python" / "lib" / name) for name in ("pyspark.zip", "py4j-0.10.9.9-src.zip"))
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    script = worker_python(env)
    assert Path(script).parent == tmp_path / WORKERS_FOLDER
    where = "import pyspark; print(pyspark.__file__)"
    assert _run(sys.executable, spark_path, where).startswith(str(home / "python" / "lib" / "pyspark.zip"))
    assert _run(script, spark_path, where) == str(home / "__init__.py")
    assert worker_python(env) == script  # written once, then found
    assert sorted(p.name for p in (tmp_path / WORKERS_FOLDER).iterdir()) == [Path(script).name]
    # Writing a script removes those of interpreters that are gone, and keeps the others.
    folder = tmp_path / WORKERS_FOLDER
    (folder / "python-gone.sh").write_text(script_text(spark_path, str(tmp_path / "deleted-venv" / "python")))
    (folder / "python-other.sh").write_text(script_text(spark_path, sys.executable))
    Path(script).unlink()
    assert worker_python(env) == script
    assert sorted(p.name for p in folder.iterdir()) == sorted([Path(script).name, "python-other.sh"])


def test_another_spark_home_an_unwritable_cache_or_turned_off_keeps_this_interpreter(tmp_path):
    assert worker_python({"WORKBENCH_PYTHON_WORKERS": "0", "XDG_CACHE_HOME": str(tmp_path)}) == sys.executable
    assert worker_python({"SPARK_HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path)}) == sys.executable
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert worker_python({"XDG_CACHE_HOME": str(blocked)}) == sys.executable  # a file where the folder would go


def test_a_cache_on_a_noexec_file_system_keeps_this_interpreter(tmp_path, monkeypatch):
    # Mounting a file system needs root; the mount flag os.statvfs reports is what is decided on.
    real = os.statvfs

    def statvfs(path):
        found = real(path)
        return os.statvfs_result((*found[:8], found.f_flag | os.ST_NOEXEC, found.f_namemax))

    assert worker_python({"XDG_CACHE_HOME": str(tmp_path)}) != sys.executable
    monkeypatch.setattr(os, "statvfs", statvfs)
    assert worker_python({"XDG_CACHE_HOME": str(tmp_path / "other")}) == sys.executable
    assert not (tmp_path / "other").exists()


def test_pyspark_python_is_the_users_when_set_and_this_interpreter_for_a_cluster(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    script = use_for_workers(True, env)
    assert env["PYSPARK_PYTHON"] == script != sys.executable
    assert use_for_workers(False, env) == sys.executable  # a cluster's executors cannot run this machine's script
    assert use_for_workers(True, env) == script
    env["PYSPARK_PYTHON"] = "/opt/python3.11"
    assert use_for_workers(True, env) == "/opt/python3.11"


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def _processes_running(module: str, under: int) -> dict[int, dict[str, str]]:
    """The environments of the processes below ``under`` whose command line names ``module``."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or module not in (entry / "cmdline").read_bytes().decode(errors="replace"):
                continue
            pid = ancestor = int(entry.name)
            while ancestor > 1 and ancestor != under:
                ancestor = _parent(ancestor)
            if ancestor == under:
                pairs = (entry / "environ").read_bytes().decode(errors="replace").split("\0")
                found[pid] = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
    return found


@pytest.mark.spark
def test_the_shared_sessions_udf_and_data_source_workers_use_the_installed_pyspark(spark, env):
    import pyspark
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    from workbench.testing import MemoryStream

    installed = str(Path(pyspark.__file__).parent)
    where = F.udf(lambda _: __import__("pyspark").__file__, StringType())
    [row] = spark.range(1).select(where("id").alias("file")).collect()
    assert row.file == os.path.join(installed, "__init__.py"), row.file
    # A MemoryStream's reader is a Python streaming source: a runner process of its own.
    events = MemoryStream(spark, "word string")
    try:
        events.add([("dog",)])
        query = events.df.writeStream.format("memory").queryName("python_workers_words").start()
        try:
            query.processAllAvailable()
            assert [r.word for r in spark.table("python_workers_words").collect()] == ["dog"]
            jvm = spark.sparkContext._gateway.proc.pid  # this session's: other Sparks run beside it
            runners = _processes_running("pyspark.sql.streaming.python_streaming_source_runner", jvm)
            assert runners, "no streaming source runner found"
            zip_path = os.path.join(installed, "python", "lib", "pyspark.zip")
            paths = {pid: environ.get("PYTHONPATH", "")
                     for pid, environ in {**runners, **_processes_running("pyspark.daemon", jvm)}.items()}
            assert not any(zip_path in path for path in paths.values()), paths
        finally:
            query.stop()
    finally:
        events.close()
