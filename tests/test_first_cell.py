"""The first cell a newcomer runs shows no red stderr box.

The Spark JVM writes start-up lines to its stderr ("WARNING: Using incubator modules:
jdk.incubator.vector", "Setting default log level to ..."), and a Jupyter kernel forwards
its child processes' stderr to the notebook. The workbench sends the JVM's stderr to the
session's log instead (``workbench.spark_log()``). The kernels here run without pytest's
``PYTEST_CURRENT_TEST``: under it ipykernel would not forward that stderr at all, and the
tests would pass whatever the workbench did. The executed quickstart's outputs are checked
for stderr by the browser test (``tests/test_browser.py``), which runs it in JupyterLab.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.kernels import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

def test_the_first_session_and_query_leave_no_stderr_under_the_cell(tmp_path: Path) -> None:
    kernel = Kernel.start(tmp_path / "jupyter")
    try:
        first = kernel.run("import workbench\nspark = workbench.session()\nspark.range(5).count()", timeout=180)
        log = json.loads(kernel.printed(
            "import json\n"
            "print(json.dumps({'path': str(workbench.spark_log()), 'text': workbench.spark_log().read_text()}))"
        ).strip().splitlines()[-1])
    finally:
        kernel.close()
    stderr = [m["content"]["text"] for m in kernel.messages
              if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"]
    assert not stderr, stderr
    assert [m["content"]["data"]["text/plain"] for m in kernel.outputs_of(first)] == ["5"]
    # Kept, one call away, in the session's private folder (the kernel was killed: remove it here).
    shutil.rmtree(Path(log["path"]).parent, ignore_errors=True)
    assert "Setting default log level" in log["text"], log
