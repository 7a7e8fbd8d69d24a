"""A notebook that ran is readable after its kernel is gone: exported HTML and a reopened notebook.

The quickstart is executed with ``jupyter nbconvert --to notebook --execute`` (no browser: the
pictures are drawn in the kernel), exported with ``--to html`` and opened in Chromium with
every network request refused, then opened in a fresh JupyterLab page without running it.
In both the monitor shows its final charts as a picture, the console sink its tables as text,
and nothing shows an error box. A notebook run and saved in JupyterLab itself is checked by
``tests/saved_pages.py`` (from ``tests/test_browser.py`` and
``tests/test_browser_without_extension.py``).
"""

from __future__ import annotations

import base64
import json
import re
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from .browser_support import ARTIFACTS, JS_KERNEL_IDLE, REPO_ROOT, chromium_context, save_screenshot, served
from .helpers import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.kernel]

#: A notebook saved with its outputs (pictures included) stays at most this large.
SAVED_BUDGET = 1_000_000
PICTURE_SIZE = (1120, 682)  # the monitor's header (two lines) over its four charts, two per row, as the page draws them
ERROR_TEXTS = ("Error displaying widget", "Click to show javascript error", "Loading widget")

#: Every picture in the page: its size once loaded (0 x 0 when it failed).
JS_PICTURES = """() => [...document.querySelectorAll('.jp-OutputArea-output img')]
    .map(img => ({w: img.naturalWidth, h: img.naturalHeight, shown: img.getBoundingClientRect().width > 0}))"""


def _environment(root: Path) -> dict[str, str]:
    """This interpreter's kernel with every Jupyter, IPython and temporary folder inside ``root``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    for variable, name in {"JUPYTER_CONFIG_DIR": "config", "JUPYTER_DATA_DIR": "data",
                           "JUPYTER_RUNTIME_DIR": "runtime", "IPYTHONDIR": "ipython", "TMPDIR": "tmp"}.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        env[variable] = str(root / name)
    env["SPARK_SUBMIT_OPTS"] = " ".join(filter(None, [os.environ.get("SPARK_SUBMIT_OPTS"),
                                                      f"-Djava.io.tmpdir={root / 'tmp'}"]))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return env


def _nbconvert(env: dict[str, str], *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "nbconvert", *args], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"nbconvert {' '.join(args)} failed:\n{done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> Path:
    """The quickstart, executed by nbconvert (its own kernel and Spark), with its outputs."""
    root = tmp_path_factory.mktemp("saved")
    folder = root / "notebooks"
    folder.mkdir()
    _nbconvert(_environment(root), "--to", "notebook", "--execute", "--ExecutePreprocessor.timeout=300",
               str(REPO_ROOT / "notebooks" / "00-quickstart.ipynb"), "--output-dir", str(folder))
    return folder / "00-quickstart.ipynb"


def _display_output(notebook: dict[str, Any], start: str) -> dict[str, Any]:
    """The one display output of the cell whose source starts with ``start``."""
    cell = next(c for c in notebook["cells"] if "".join(c["source"]).startswith(start))
    [output] = [o for o in cell["outputs"] if o["output_type"] == "display_data"]
    return output


def _monitor_output(notebook: dict[str, Any]) -> dict[str, Any]:
    return _display_output(notebook, "%%stream numbers")


def _console_output(notebook: dict[str, Any]) -> dict[str, Any]:
    return _display_output(notebook, "%%stream squares")


def _plain(data: dict[str, Any]) -> str:
    text = data.get("text/plain", "")
    return text if isinstance(text, str) else "".join(text)


def test_executed_quickstart_keeps_a_picture_and_text_of_its_monitor(executed):
    size = executed.stat().st_size
    print(f"executed quickstart: {size:,} bytes")
    assert size <= SAVED_BUDGET
    notebook = json.loads(executed.read_text(encoding="utf-8"))
    assert not [o for c in notebook["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"]
    data = _monitor_output(notebook)["data"]
    # No page ever drew the widget: the output is the picture and the text, not a widget view
    # that nbconvert's HTML would pick and show as nothing.
    assert set(data) == {"image/png", "text/plain"}
    png = base64.b64decode(data["image/png"])
    assert png.startswith(b"\x89PNG") and len(png) < 200_000
    lines = _plain(data).splitlines()
    assert lines[0] == "Stream monitor: numbers (memory sink), stopped"
    # The quickstart's events start at 2024-01-01 00:00 with a watermark delay: after a few
    # batches the watermark is a real time of that night (not none, not Spark's epoch 0).
    assert " rows in, " in lines[1]
    assert re.search(r"last watermark (2023-12-31|2024-01-01) \d\d:\d\d:\d\d UTC$", lines[1]), lines[1]
    # The console sink's output: its tables as text (no widget view that would show nothing).
    console = _console_output(notebook)["data"]
    assert set(console) == {"text/plain"}
    assert "Batch: 0" in _plain(console) and "|square|" in _plain(console)


@pytest.fixture(scope="module")
def browser(playwright: Any, tmp_path_factory) -> Iterator[Any]:
    profile = tmp_path_factory.mktemp("chromium")
    with chromium_context(playwright, profile, viewport={"width": 1400, "height": 1000}) as context:
        yield context


def _no_error_boxes(page: Any) -> None:
    text = page.inner_text("body")
    shown = [needle for needle in ERROR_TEXTS if needle in text]
    assert not shown, f"the page shows {shown}"


def test_exported_html_shows_the_pictures_offline(executed, browser, tmp_path):
    env = _environment(tmp_path)
    _nbconvert(env, "--to", "html", str(executed), "--output-dir", str(tmp_path))
    page = browser.new_page()
    refused: list[str] = []

    def offline(route: Any) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", offline)
    try:
        page.goto((tmp_path / "00-quickstart.html").as_uri())
        wait_for(lambda: page.evaluate(JS_PICTURES), 30, 0.25, text="no picture in the exported page")
        pictures = page.evaluate(JS_PICTURES)
        assert {"w": PICTURE_SIZE[0], "h": PICTURE_SIZE[1], "shown": True} in pictures, pictures
        assert "Batch: 0" in page.inner_text("body")  # the console sink's tables
        _no_error_boxes(page)
        page.locator(".jp-OutputArea-output img").first.scroll_into_view_if_needed()
        save_screenshot(page, "saved-quickstart-html.png")
    finally:
        page.close()


def test_saved_notebook_reopened_without_running_shows_the_pictures(executed, browser, tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "quickstart-run.ipynb").write_bytes(executed.read_bytes())
    with served(folder) as lab:
        page = browser.new_page()
        try:
            page.goto(lab.notebook_url("quickstart-run.ipynb"))
            wait_for(lambda: page.evaluate(JS_PICTURES), 90, 0.25, text="no picture in the reopened notebook")
            # The kernel starts (nothing runs) and the widget manager restores: no error box after.
            page.wait_for_function(JS_KERNEL_IDLE, timeout=90_000, polling=250)
            pictures = page.evaluate(JS_PICTURES)
            assert {"w": PICTURE_SIZE[0], "h": PICTURE_SIZE[1], "shown": True} in pictures, pictures
            _no_error_boxes(page)
            executed_count = page.evaluate("""() => window.jupyterapp.shell.currentWidget.content.widgets
                .filter(c => c.model.type === 'code' && c.model.executionCount !== null).length""")
            assert executed_count > 0  # the saved outputs, not a new run
            page.locator(".jp-OutputArea-output img").first.scroll_into_view_if_needed()
            save_screenshot(page, "saved-quickstart-reopened.png")
        except Exception:
            save_screenshot(page, "saved-quickstart-reopened-failed.png")
            (ARTIFACTS / "saved-jupyter.log").write_text(lab.log_text(), encoding="utf-8")
            raise
        finally:
            page.close()
