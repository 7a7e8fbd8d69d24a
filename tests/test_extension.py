"""The JupyterLab extension as shipped, and the kernel side of the Streams panel and Spark UI.

* The built extension (``workbench/labextension``) and the installed copy JupyterLab loads
  were built from the sources now in ``extensions/`` (the build records their hash; here it
  is recomputed in Python), and ``jupyter labextension list`` shows it enabled and OK.
* ``package.json`` keeps the choices the page depends on: plotly.js pinned to the version
  plotly.py ships and built as a chunk of its own, ``@jupyter-widgets/base`` shared.
* Pure tests of the Spark UI button model and helpers, of the ``workbench.streams`` comm's
  messages, its throttle (injected clock) and its stop command; one snapshot of a real
  stream on Spark.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import _labext
from workbench.views.sparkui import NO_UI_REASON, SparkUIButton, statistics_path, ui_port

REPO = Path(__file__).resolve().parent.parent
EXTENSIONS = REPO / "extensions"
PLOTLY_JS = "4.1.1"  # what plotly.py 7.1 ships; the extension must use the same

# ---------------------------------------------------------------------------------------------
# The build and the installed copy
# ---------------------------------------------------------------------------------------------


def test_build_matches_its_sources():
    recorded = _labext.recorded_hash(_labext.BUILD_DIR)
    assert recorded is not None, f"no built extension in {_labext.BUILD_DIR}: {_labext.REBUILD_HINT}"
    assert recorded == _labext.source_hash(EXTENSIONS), (
        f"{_labext.BUILD_DIR} was built from other sources than extensions/ holds: {_labext.REBUILD_HINT}"
    )


def test_installed_copy_is_current_and_enabled():
    status = _labext.labextension_status()
    assert status.installed, f"JupyterLab finds no {_labext.LABEXTENSION_NAME} extension: {_labext.REBUILD_HINT}"
    assert status.enabled, f"the extension is disabled: jupyter labextension enable {_labext.LABEXTENSION_NAME}"
    assert status.version == json.loads((EXTENSIONS / "package.json").read_text())["version"]
    assert status.stale is False, f"{status.path} is stale: {_labext.REBUILD_HINT}"


def test_jupyter_labextension_list_shows_it_enabled():
    done = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"],
                          capture_output=True, text=True, timeout=60, check=False)
    text = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    assert re.search(r"spark-streaming-workbench v0\.1\.0 enabled\s+OK \(python, spark-streaming-workbench\)", text), text


def test_source_hash_follows_every_source_file(tmp_path):
    copy = tmp_path / "extensions"
    for name in _labext.source_files(EXTENSIONS):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(EXTENSIONS / name, copy / name)
    assert _labext.source_hash(copy) == _labext.source_hash(EXTENSIONS)
    assert {"package.json", "package-lock.json", "src/index.ts", "schema/streams.json", "style/base.css"} <= set(
        _labext.source_files(copy))
    (copy / "style" / "base.css").write_text("/* changed */", encoding="utf-8")
    assert _labext.source_hash(copy) != _labext.source_hash(EXTENSIONS)


@pytest.mark.skipif(shutil.which("node") is None, reason="Node is not installed")
def test_node_and_python_compute_the_same_source_hash():
    done = subprocess.run(["node", str(EXTENSIONS / "scripts" / "source-hash.mjs")],
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split()[0] == _labext.source_hash(EXTENSIONS)


def test_doctor_line_and_disabled_extension(tmp_path):
    data, config = tmp_path / "data", tmp_path / "config"
    assert not _labext.labextension_status([str(data)], [str(config)]).installed
    target = data / "labextensions" / _labext.LABEXTENSION_NAME
    target.mkdir(parents=True)
    (target / "package.json").write_text(json.dumps({"version": "0.1.0"}))
    status = _labext.labextension_status([str(data)], [str(config)], source_dir=tmp_path / "none")
    assert (status.installed, status.enabled, status.version, status.stale) == (True, True, "0.1.0", None)
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {_labext.LABEXTENSION_NAME: True}}))
    status = _labext.labextension_status([str(data)], [str(config)], source_dir=EXTENSIONS)
    assert not status.enabled and status.stale is True  # no build-source.json: not built from these sources
    line = _labext.doctor_line(status)
    assert "disabled (jupyter labextension enable spark-streaming-workbench)" in line
    assert "rebuild with" in line


def test_package_json_choices():
    package = json.loads((EXTENSIONS / "package.json").read_text())
    assert (package["name"], package["version"]) == ("spark-streaming-workbench", "0.1.0")
    assert package["dependencies"]["plotly.js-dist-min"] == PLOTLY_JS
    lab = package["jupyterlab"]
    assert lab["outputDir"] == "../workbench/labextension"
    assert lab["sharedPackages"]["@jupyter-widgets/base"] == {"bundled": False, "singleton": True}
    lock = json.loads((EXTENSIONS / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/plotly.js-dist-min"]["version"] == PLOTLY_JS


def test_plotly_js_matches_plotly_py():
    import plotly

    bundled = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    head = bundled.read_text(encoding="utf-8", errors="replace")[:300]
    assert f"v{PLOTLY_JS}" in head, f"plotly.py ships another plotly.js: {head[:120]!r}"


def test_plotly_js_is_a_chunk_of_its_own():
    static = _labext.BUILD_DIR / "static"
    package = json.loads((_labext.BUILD_DIR / "package.json").read_text())
    entry = static / Path(package["jupyterlab"]["_build"]["load"]).name
    chunks = {path: path.read_text(encoding="utf-8", errors="replace") for path in static.glob("*.js")}
    plotly_chunks = [path for path, text in chunks.items() if f'version="{PLOTLY_JS}"' in text]
    assert len(plotly_chunks) == 1, f"plotly.js {PLOTLY_JS} is in {len(plotly_chunks)} chunks"
    plotly_chunk = plotly_chunks[0]
    assert plotly_chunk != entry
    assert "workbench:open-spark-ui" not in chunks[plotly_chunk], "plotly.js is bundled with the plugins"
    assert plotly_chunk.stat().st_size > 3_000_000


# ---------------------------------------------------------------------------------------------
# The Spark UI button's model and helpers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "port"), [
    ("http://127.0.0.1:4040", 4040), ("http://localhost:4041/", 4041), (" http://[::1]:4050 ", 4050),
    (None, 0), ("", 0), ("http://127.0.0.1", 0), ("http://host:99999", 0), ("not a url", 0),
])
def test_ui_port(url, port):
    assert ui_port(url) == port


def test_statistics_path_quotes_the_run_id():
    assert statistics_path("a b/c") == "/StreamingQuery/statistics/?id=a%20b%2Fc"


def test_spark_ui_button_model():
    button = SparkUIButton()
    state = button.get_state()
    assert (state["_model_module"], state["_view_module"]) == ("spark-streaming-workbench",) * 2
    assert (state["_model_module_version"], state["_model_name"], state["_view_name"]) == (
        "^0.1.0", "SparkUIButtonModel", "SparkUIButtonView")
    assert (state["port"], state["path"], state["reason"]) == (0, "/", NO_UI_REASON)
    button.port, button.path = 4040, statistics_path("r")
    assert button.get_state()["path"] == "/StreamingQuery/statistics/?id=r"
    with pytest.raises(ValueError, match="TCP port"):
        button.port = 70000
    with pytest.raises(ValueError, match="must start with '/'"):
        button.path = "StreamingQuery/"
    button.close()
