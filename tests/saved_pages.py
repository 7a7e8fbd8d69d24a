"""Checks of a notebook run and saved in JupyterLab, reopened once its kernel is gone, and exported to HTML.

The browser tests' quickstart runs in a private JupyterLab (headless Chromium). While its kernel lives, the
monitor stays a live widget after its stream stops and its output gains the picture; the
console sink's output gains the batches' text. The page saves the notebook (as a user's
Ctrl+S; the file, pictures included, stays under 1 MB), the kernel is shut down, and the
notebook is opened in a fresh page (JupyterLab starts a new kernel, which has none of the
old widgets): the monitor shows its picture and the console its tables, not "Error
displaying widget: model not found"; the same in a page that opens it with no kernel at all
(where widgets would say "Loading widget..." for ever).
The saved file's ``nbconvert --to html``, opened offline, shows the same.

Both with the workbench's extension (it shows the picture in place of the dead widget; the
file keeps the widget view too; ``tests/test_browser.py``) and with it disabled (the server
then saves those outputs without their widget view; ``tests/test_browser_without_extension.py``).
Each runs these checks (:func:`stop_and_save`, :func:`reopened_and_exported`) on the page of
its live quickstart, so that the quickstart runs once for its live and its saved checks.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from .browser_support import JS_ACTIVATE_CELL, JS_KERNEL_IDLE, LabServer, save_screenshot, scroll_into_view
from .helpers import wait_for
from .test_browser import STOP_CELL, evidence_on_failure
from .test_pictures import pixels, share_of
from .test_saved_notebooks import (
    ERROR_TEXTS, JS_PICTURES, PICTURE_SIZE, SAVED_BUDGET, _console_output, _environment, _monitor_output, _nbconvert,
    _no_error_boxes, _plain,
)

NOTEBOOK = "00-quickstart.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: The console sink's first batch, as the quickstart prints it (three of five rows).
CONSOLE_TEXT = "Batch: 0"

#: The mime types of the display outputs of the cell starting with the argument, in the page.
JS_OUTPUT_TYPES = """(start) => {
  const cell = window.jupyterapp.shell.currentWidget.content.widgets
    .find(c => c.model.type === 'code' && c.model.sharedModel.getSource().startsWith(start));
  return cell.model.outputs.toJSON().filter(o => o.output_type === 'display_data')
    .map(o => Object.keys(o.data).sort());
}"""

#: Whether JupyterLab trusts every code cell of the current notebook (then it picks widget views).
JS_TRUSTED = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .filter(c => c.model.type === 'code').every(c => c.model.trusted)"""

#: The colour plotly gave each trace of each of a monitor's charts (the trace's own or the colorway's).
JS_TRACE_COLOURS = """(monitor) => Object.fromEntries([...monitor.querySelectorAll('.workbench-chart')]
  .map(chart => [chart.dataset.chart,
                 (chart._fullData || []).map(t => String((t.type === 'bar' ? t.marker : t.line)?.color))]))"""

JS_ALL_RAN = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .every(c => c.model.type !== 'code' || (c.model.executionCount !== null && c.model.executionState !== 'running'))"""


def _saved(path: Path) -> dict[str, Any] | None:
    """The saved notebook once every code cell ran and the monitor's picture and the console's tables are in it."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    if any(cell["cell_type"] == "code" and cell.get("execution_count") is None for cell in notebook["cells"]):
        return None  # saved before the stop cell ran (tests/test_browser.py saves the live quickstart)
    try:
        monitor, console = _monitor_output(notebook)["data"], _console_output(notebook)["data"]
    except (StopIteration, ValueError):
        return None
    return notebook if "image/png" in monitor and CONSOLE_TEXT in _plain(console) else None


def stop_and_save(lab: LabServer, page: Any) -> dict[str, Any]:
    """Run the rest of the quickstart (its stop cell) in ``page``, which ran the cells above it;
    check the live outputs, save from the page, close it and shut the kernel down; the saved notebook."""
    console = page.locator(".workbench-console")
    with evidence_on_failure(page, lab, f"saved-{type(lab).__name__}-live"):
        page.evaluate(JS_ACTIVATE_CELL, STOP_CELL)
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-below'); }")
        wait_for(lambda: page.evaluate(JS_ALL_RAN), 240, 0.5, text="the quickstart did not finish running")
        # After `%stream stop --all` the output holds the picture beside the widget view (Run
        # All queues every cell before the page's "ready": the view may come back a moment later).
        full = [[WIDGET_VIEW, "image/png", "text/plain"]]
        wait_for(lambda: page.evaluate(JS_OUTPUT_TYPES, "%%stream numbers") == full, 30, 0.25,
                 text=lambda: f"the monitor's output holds {page.evaluate(JS_OUTPUT_TYPES, '%%stream numbers')}")
        assert page.evaluate(JS_OUTPUT_TYPES, "%%stream squares") == [[WIDGET_VIEW, "text/plain"]]
        # The page drew the widgets, so it keeps showing them, not the picture or the text.
        monitor = page.locator(".workbench-monitor")
        assert monitor.count() == 1
        scroll_into_view(monitor)  # out of view, its charts would stay undrawn
        wait_for(lambda: monitor.locator(".js-plotly-plot").count() == 4, 30, 0.25,
                 text=lambda: f"the monitor drew {monitor.locator('.js-plotly-plot').count()} charts, not 4")
        # Its header, once the view has come back (a view redrawn a moment ago reads empty).
        header = monitor.locator(".widget-html").first
        wait_for(lambda: "stopped" in header.inner_text(), 30, 0.25,
                 text=lambda: f"the monitor's header reads {header.inner_text()!r}")
        assert not page.locator(".jp-OutputArea-output img").count()
        scroll_into_view(console)  # out of view, its text is not laid out
        wait_for(lambda: CONSOLE_TEXT in console.inner_text(), 30, 0.25,
                 text=lambda: f"the console shows {console.inner_text()!r}")
        _no_error_boxes(page)

        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        path = lab.server_root / NOTEBOOK
        saved = wait_for(lambda: _saved(path), 30, 0.25,
                         text="the saved notebook lacks the picture or the console text")
        _drawn_in_the_live_colours(saved, monitor.evaluate(JS_TRACE_COLOURS))
        # With its pictures and texts, the saved quickstart stays small (no widget state, no plotly.js).
        size = path.stat().st_size
        assert size <= SAVED_BUDGET, f"the saved quickstart is {size} bytes (budget {SAVED_BUDGET})"
    page.close()
    for kernel in lab.api("GET", "/api/kernels") or []:
        lab.api("DELETE", f"/api/kernels/{kernel['id']}", timeout=30.0)
    notebook = _saved(path)
    assert notebook is not None
    return notebook


def _drawn_in_the_live_colours(notebook: dict[str, Any], live: dict[str, list[str]]) -> None:
    """The monitor's picture draws the latency chart's first bars and the rates chart's two
    lines in the colours the page drew them in (plotly.js's colorway, not plotly.py's)."""
    image = pixels(base64.b64decode(_monitor_output(notebook)["data"]["image/png"]))
    half_h, half_w = image.shape[0] // 2, image.shape[1] // 2
    for key, region, traces in (("latency", image[half_h:, :half_w], 1), ("rates", image[half_h:, half_w:], 2)):
        for index, colour in enumerate(live[key][:traces]):
            assert share_of(region, tuple(bytes.fromhex(colour[1:]))) > 0.001, (
                f"the picture's {key} chart has no trace in {colour}, the colour the page drew its trace {index} in "
                f"(the page's colours: {live[key]})")


def _shows_pictures_and_tables(page: Any) -> None:
    """The page shows the monitor's picture and the console's tables, and no error box or spinner."""
    # On screen: JupyterLab lays out only the cells in view.
    page.locator(".jp-Cell").filter(has_text="%%stream numbers").first.scroll_into_view_if_needed()
    wait_for(lambda: {"w": PICTURE_SIZE[0], "h": PICTURE_SIZE[1], "shown": True} in page.evaluate(JS_PICTURES),
             60, 0.25, text=lambda: f"the notebook shows the pictures {page.evaluate(JS_PICTURES)}")
    console = page.locator(".jp-Cell").filter(has_text="%%stream squares").locator(".jp-Cell-outputArea")
    scroll_into_view(console)
    wait_for(lambda: CONSOLE_TEXT in console.inner_text(), 30, 0.25,
             text=lambda: f"the console's output shows {console.inner_text()!r}")
    assert "|square|" in console.inner_text()  # a table, not a summary line
    # Nothing is left loading or failed, a few seconds on.
    page.wait_for_timeout(2_000)
    _no_error_boxes(page)
    assert page.evaluate(JS_TRUSTED)  # so the pictures are not merely what an untrusted notebook shows


def _reopen(lab: LabServer, browser: Any) -> None:
    """Open the saved notebook in a fresh page (a new kernel, none of the old widgets); check it."""
    page = browser.new_page()
    with evidence_on_failure(page, lab, f"saved-{type(lab).__name__}-reopened"):
        page.goto(lab.notebook_url(NOTEBOOK))
        page.wait_for_function(JS_KERNEL_IDLE, timeout=90_000, polling=250)
        # The widget manager has asked the new kernel for its widgets (none) by now; the
        # renderer gives up on the old ones then.
        _shows_pictures_and_tables(page)
        page.locator(".jp-OutputArea-output img").first.scroll_into_view_if_needed()
        save_screenshot(page, f"saved-{type(lab).__name__}-reopened.png")
    page.close()


def _reopen_without_kernel(lab: LabServer, browser: Any, notebook: dict[str, Any]) -> None:
    """Open a copy that names no kernel and choose "No Kernel": no widget manager ever comes."""
    import nbformat
    from nbformat.sign import NotebookNotary

    # Neither a kernel nor a language: either would make JupyterLab start a kernel unasked.
    copy = nbformat.from_dict(dict(notebook, metadata={k: v for k, v in notebook["metadata"].items()
                                                       if k not in ("kernelspec", "language_info")}))
    # Signed as the server signed the original: JupyterLab trusts it (and picks widget views).
    NotebookNotary(data_dir=str(lab.root / "data")).sign(copy)
    nbformat.write(copy, str(lab.server_root / "no-kernel.ipynb"))
    settings = lab.root / "settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    settings.write_text(json.dumps({"autoStartDefaultKernel": False}), encoding="utf-8")
    page = browser.new_page()
    with evidence_on_failure(page, lab, f"saved-{type(lab).__name__}-no-kernel"):
        # A workspace of its own: the default one would reopen the quickstart beside it.
        page.goto(f"{lab.url}/lab/workspaces/no-kernel/tree/no-kernel.ipynb?token={lab.token}")
        page.locator(".jp-Dialog").get_by_role("button", name="No Kernel").click(timeout=60_000)
        page.wait_for_function("""() => { const s = window.jupyterapp.shell.currentWidget.sessionContext;
                                          return s.hasNoKernel && !(s.session && s.session.kernel); }""",
                               timeout=30_000, polling=250)
        _shows_pictures_and_tables(page)  # not "Loading widget..." for ever
    page.close()


def _exported(notebook: dict[str, Any], browser: Any, tmp_path: Path) -> None:
    """The saved notebook's nbconvert HTML, opened with every network request refused."""
    source = tmp_path / "saved.ipynb"
    source.write_text(json.dumps(notebook), encoding="utf-8")
    _nbconvert(_environment(tmp_path), "--to", "html", str(source), "--output-dir", str(tmp_path))
    page = browser.new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
    try:
        page.goto((tmp_path / "saved.html").as_uri())
        pictures = page.evaluate(JS_PICTURES)
        assert {"w": PICTURE_SIZE[0], "h": PICTURE_SIZE[1], "shown": True} in pictures, pictures
        assert CONSOLE_TEXT in page.inner_text("body")
        shown = [needle for needle in ERROR_TEXTS if needle in page.inner_text("body")]
        assert not shown, f"the exported page shows {shown}"
    finally:
        page.close()


def reopened_and_exported(lab: LabServer, browser: Any, notebook: dict[str, Any], tmp_path: Path, *,
                          extension: bool) -> None:
    """The saved notebook's outputs, and the notebook reopened (with a new kernel and with none) and exported.

    ``extension`` says whether ``lab``'s page has the workbench's extension.
    """
    monitor, console = _monitor_output(notebook), _console_output(notebook)
    if not extension:  # no page-side fallback: the file holds what to show
        assert sorted(monitor["data"]) == ["image/png", "text/plain"]
        assert sorted(console["data"]) == ["text/plain"]
    else:  # the file keeps the live view; the extension shows the picture when it is dead
        assert sorted(monitor["data"]) == [WIDGET_VIEW, "image/png", "text/plain"]
        assert sorted(console["data"]) == [WIDGET_VIEW, "text/plain"]
    _reopen(lab, browser)
    _reopen_without_kernel(lab, browser, notebook)
    _exported(notebook, browser, tmp_path)
