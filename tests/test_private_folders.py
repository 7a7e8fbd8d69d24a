"""Temporary folders of killed processes: the next session removes them, and only them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from workbench.spark.private_folders import OWNER, private_folder, sweep_orphans

#: A session that is killed once it runs: nothing of the workbench's clean-up runs.
KILLED = """
import json, os, signal, workbench
from workbench.spark import current_env
spark = workbench.session()
env = current_env()
print(json.dumps([str(env.temp_dir), str(spark._workbench_scratch)]), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.kernel
def test_the_folders_of_a_killed_session_go_at_the_next_sweep():
    done = subprocess.run([sys.executable, "-c", KILLED], capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    left = [Path(p) for p in json.loads(done.stdout.strip().splitlines()[-1])]
    assert all(folder.is_dir() for folder in left), "the killed session left its folders (the case to mend)"
    assert all(folder.name.startswith("workbench-") for folder in left)
    removed = sweep_orphans(tempfile.gettempdir(), background=False)
    assert set(left) <= set(removed)
    assert not any(folder.exists() for folder in left)


def test_a_sweep_leaves_live_foreign_and_unmarked_folders(tmp_path):
    mine = private_folder()  # this process is alive
    try:
        dead = tmp_path / "workbench-dead"
        dead.mkdir()
        ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        (dead / OWNER).write_text(f"{os.uname().nodename} {int(ended.stdout)}\n")
        foreign = tmp_path / "workbench-elsewhere"
        foreign.mkdir()
        (foreign / OWNER).write_text(f"another-machine {int(ended.stdout)}\n")  # a shared folder
        unmarked = tmp_path / "workbench-unmarked"
        unmarked.mkdir()
        other = tmp_path / "not-ours"
        other.mkdir()
        (other / OWNER).write_text(f"{os.uname().nodename} {int(ended.stdout)}\n")
        live = tmp_path / "workbench-live"
        live.mkdir()
        (live / OWNER).write_text((mine / OWNER).read_text())

        assert sweep_orphans(tmp_path, background=False) == [dead]
        assert sorted(p.name for p in tmp_path.iterdir()) == [
            "not-ours", "workbench-elsewhere", "workbench-live", "workbench-unmarked"]
    finally:
        shutil.rmtree(mine)
