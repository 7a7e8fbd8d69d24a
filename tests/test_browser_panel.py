"""The Streams panel, the status bar count and the Spark UI tab in a real JupyterLab.

One private JupyterLab server (127.0.0.1, random port and token) and one headless Chromium
serve the whole module; the tests run in order on two small notebooks written here:
``panel.ipynb`` loads the workbench, starts two streams (``numbers`` and ``letters``)
without monitors and shows a Spark UI button; ``plain.ipynb`` never loads the workbench.

* a kernel without the workbench: the panel says to run ``%load_ext workbench`` and the
  status bar shows no count; restarted, it had no streams to lose; a page loaded while it
  runs a cell shows no "streams after this cell" in the status bar;
* the panel lists both streams of the notebook's kernel and their batch counts grow; the
  status bar says ``⏵ 2 streams``; after clearing every output the panel keeps updating;
* Stop in the panel stops ``numbers`` (the row says stopped, the kernel agrees) and the
  count drops to one; clicked while a cell runs, the row says it stops once the cell ends;
* while the panel is hidden, or shown in a browser tab in the background, the kernel sends
  its page no snapshot per batch (the count stays); shown again, it says the newest batch
  count at once and keeps updating;
* clicking a row activates the cell that started the stream; once that cell is deleted the
  row says so;
* the Spark UI button opens the query's statistics page in a tab through the Jupyter
  server's proxy; the proxy refuses a request without the token; a port with no Spark UI
  and port 0 each give a clear message in the tab; the ``SparkUIButton`` widget under a cell
  opens its page in a tab too;
* the Spark UI tab follows Spark's root link (a redirect that leaves the proxy) back under
  the proxy, and a job's "(kill)" link asks to confirm and kills the job;
* closing the notebook while a stream runs says so in the panel (closing one of two views
  of it does not), also while another
  notebook is active (until dismissed, or the notebook is opened again); reopening it shows
  the stream again; a page back from a lost connection has one comm with the kernel;
* the Streams panel shows again after a page reload; reloads leave the kernel one Streams
  reader per page, and none of the old pages' kernel subshells; a window opened by a page
  reloaded with no notebook has comms of its own; a page reloaded while a cell runs says
  the panel waits for the cell to end, then lists the streams;
* once the Spark session is stopped, the rows' Spark UI buttons are disabled, the panel says
  there is no Spark UI, and a tab opened on the old port says nothing answers there;
* a kernel restart empties the panel and says the streams were stopped;
* a monitor's Stop clicked while a cell runs says at once that it stops when the cell ends;
  after a kernel restart the monitor says its kernel is gone and its buttons are disabled,
  its charts left as they were (``monitor.ipynb``);
* a kernel whose process is killed (``kill.ipynb``): JupyterLab restarts it, the panel says
  the kernel died with its stream, the status bar count goes, and the Spark JVM ends too;
* a Spark Connect session (``connect.ipynb``, a local Connect server) has no Spark UI in the
  kernel: the row's button and the monitor's are disabled, and the panel says why.

No test may leave a JavaScript error in the page's console (console errors and uncaught
exceptions are collected for every test).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import urllib.error
import urllib.request
from typing import Any, Iterator

import psutil
import pytest

from .browser_support import (
    ARTIFACTS, JS_ACTIVATE_CELL, JS_CAPTION_TEXT, JS_CELLS_SHOWING, JS_KERNEL_IDLE, JS_KERNEL_PRINT, LabServer, free_port, chromium_context, first_page,
    save_screenshot, scroll_into_view, served, write_notebook,
)
from .helpers import family_of, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("connect-port")]

VIEWPORT = {"width": 1500, "height": 1000}
PANEL = "#workbench-streams"
STATUS = ".jp-workbench-StreamsStatus"

LOAD = "import workbench\nspark = workbench.session()\n%load_ext workbench"
NUMBERS = '%%stream numbers --trigger "1 second" --no-monitor\n' \
          'spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()'
LETTERS = '%%stream letters --trigger "1 second" --no-monitor\n' \
          'spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 3).load()'
TICKS = '%%stream ticks --trigger "1 second" --no-monitor\n' \
        'spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 2).load()'
#: A local Spark Connect server, started by pyspark in the kernel (its JVM has a Spark UI of
#: its own, which the Connect session cannot tell the kernel about).
CONNECT = 'import os\nos.environ["SPARK_REMOTE"] = "local[1]"\n' + LOAD
MONITORED = '%%stream remote --trigger "1 second"\n' \
            'spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 2).load()'
WATCHED = '%%stream watched --trigger "1 second"\n' \
          'spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 2).load()'
#: A cell that runs until the test writes ``FLAG`` in the kernel's folder (the notebooks').
FLAG = "cell-may-end.flag"
WAIT_FOR_FLAG = f"import os, time\nprint('waiting for the test', flush=True)\nwhile not os.path.exists({FLAG!r}): time.sleep(0.1)\nos.remove({FLAG!r})"
BUTTON = 'from workbench.views.sparkui import SparkUIButton, ui_port\n' \
         'SparkUIButton(port=ui_port(spark.sparkContext.uiWebUrl), path="/StreamingQuery/", title="all queries")'


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[LabServer]:
    folder = tmp_path_factory.mktemp("panel-notebooks")
    write_notebook(folder / "panel.ipynb", LOAD, NUMBERS, LETTERS, "1 + 1", BUTTON)
    write_notebook(folder / "plain.ipynb", "1 + 1")
    write_notebook(folder / "kill.ipynb", LOAD, TICKS)
    write_notebook(folder / "connect.ipynb", CONNECT, MONITORED)
    write_notebook(folder / "monitor.ipynb", LOAD, WATCHED, WAIT_FOR_FLAG, WATCHED.replace("watched", "again"))
    with served(folder) as server:
        yield server


#: JupyterLab's own debugger logs this when a notebook closes while it asks the kernel for
#: its debug state; it happens without the workbench too. JupyterLab 4.0 leaves the same
#: cancelled request as an uncaught page error.
JUPYTERLAB_NOISE = ("Could not restore the debugger state: Canceled future for debug_request",)
JUPYTERLAB_PAGE_NOISE = ("Canceled future for debug_request message before replies were done",)


class Console:
    """Errors the page reported: console errors and uncaught exceptions."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", self._page_error)

    def _console(self, message: Any) -> None:
        if message.type == "error" and not message.text.startswith(JUPYTERLAB_NOISE):
            self.errors.append(f"console.error: {message.text}")

    def _page_error(self, error: Any) -> None:
        if not str(error).startswith(JUPYTERLAB_PAGE_NOISE):
            self.errors.append(f"page error: {error}")

    def take(self) -> list[str]:
        errors, self.errors = self.errors, []
        return errors


@pytest.fixture(scope="module")
def browser(playwright: Any, lab: LabServer) -> Iterator[tuple[Any, Console]]:
    with chromium_context(playwright, lab.root / "chromium", viewport=VIEWPORT) as context:
        page = first_page(context)
        yield page, Console(page)


@pytest.fixture
def page(browser, lab: LabServer, request) -> Iterator[Any]:
    """The module's page; on failure a screenshot and the server log go to test-artifacts/."""
    page, console = browser
    console.take()
    failures = request.session.testsfailed
    yield page
    if request.session.testsfailed > failures:
        save_screenshot(page, f"panel-{request.node.name}.png")
        (ARTIFACTS / "panel-jupyter.log").write_text(lab.log_text(), encoding="utf-8")
    errors = console.take()
    assert not errors, "the page logged errors:\n" + "\n".join(errors)


def _open(page: Any, lab: LabServer, name: str) -> None:
    if page.url.startswith(lab.url):
        page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", name)
    else:
        page.goto(lab.notebook_url(name))
    wait_for(lambda: page.evaluate("(name) => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
                                   " return !!w && !!w.context && w.context.path === name; }", name),
             60, 0.25, text=f"{name} did not open")
    page.wait_for_function(JS_KERNEL_IDLE, timeout=90_000, polling=250)
    page.evaluate("() => window.jupyterapp.commands.execute('workbench:show-streams')")


JS_KERNEL_STATUS = "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status"


def _panel_text(page: Any) -> str:
    return page.locator(PANEL).inner_text()


def _row(page: Any, name: str) -> Any:
    return page.locator(f"{PANEL} .jp-workbench-Stream[data-stream='{name}']")


def _batches(page: Any, name: str) -> int:
    row = _row(page, name)
    if not row.count():
        return -1
    return int(row.locator(".jp-workbench-Stream-batches").get_attribute("data-batches") or -1)


def _status_text(page: Any) -> str:
    item = page.locator(STATUS)
    return item.inner_text() if item.count() and item.is_visible() else ""


def _run_all(page: Any) -> None:
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    def errors() -> list[str]:
        return page.evaluate("""() => window.jupyterapp.shell.currentWidget.content.widgets
            .flatMap(c => c.model.type === 'code' ? c.model.outputs.toJSON() : [])
            .filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue)""")

    def done() -> bool:
        assert not errors(), f"cells raised: {errors()}"
        return page.evaluate("""() => window.jupyterapp.shell.currentWidget.content.widgets
            .every(c => c.model.type !== 'code' || (c.model.executionCount !== null
                   && c.model.executionState !== 'running'))""")

    wait_for(done, 180, 0.5, text="the notebook's cells did not finish")


def test_a_kernel_without_the_workbench(page, lab):
    _open(page, lab, "plain.ipynb")
    wait_for(lambda: "run %load_ext workbench" in _panel_text(page), 30, 0.25,
             text=lambda: f"the panel says {_panel_text(page)!r}")
    assert page.locator(PANEL).get_attribute("data-state") == "not-loaded"
    assert _status_text(page) == ""
    # Restarted, it had no streams to lose: the panel says nothing of streams gone.
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart(); }")
    wait_for(lambda: page.locator(PANEL).get_attribute("data-state") == "restarting", 30, 0.05,
             text=lambda: f"the kernel did not restart: {_panel_text(page)!r}")
    wait_for(lambda: page.locator(PANEL).get_attribute("data-state") == "not-loaded", 60, 0.25,
             text=lambda: f"after the restart the panel says {_panel_text(page)!r}")
    lost = page.locator(f"{PANEL} .jp-workbench-StreamsPanel-lost")
    assert lost.is_hidden() and "streams are gone" not in _panel_text(page), _panel_text(page)
    # A page loaded while it runs a cell: nothing says it will have streams once the cell ends.
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                  ".requestExecute({code: 'import time; time.sleep(8)', silent: false, store_history: false}); }")
    wait_for(lambda: page.evaluate(JS_KERNEL_STATUS) == "busy", 10, 0.05, text="the kernel never went busy")
    _reload(page)
    page.evaluate("() => window.jupyterapp.commands.execute('workbench:show-streams')")
    wait_for(lambda: page.locator(PANEL).get_attribute("data-state") == "waiting", 30, 0.25,
             text=lambda: f"reloaded while a cell runs, the panel says {_panel_text(page)!r}")
    assert _status_text(page) == ""
    page.wait_for_function(JS_KERNEL_IDLE, timeout=90_000, polling=250)
    wait_for(lambda: page.locator(PANEL).get_attribute("data-state") == "not-loaded", 30, 0.25,
             text=lambda: f"once the cell ended the panel says {_panel_text(page)!r}")
    assert _status_text(page) == ""


def test_the_panel_lists_the_kernels_streams_live(page, lab):
    _open(page, lab, "panel.ipynb")
    _run_all(page)
    wait_for(lambda: _batches(page, "numbers") >= 1 and _batches(page, "letters") >= 1, 60, 0.25,
             text=lambda: f"the panel did not list both streams: {_panel_text(page)!r}")
    names = page.locator(f"{PANEL} .jp-workbench-Stream-name").all_inner_texts()
    assert names == ["numbers", "letters"]
    assert _row(page, "numbers").locator(".jp-workbench-Stream-status").inner_text() == "active"
    assert "rows/s" in _row(page, "numbers").inner_text()
    wait_for(lambda: _status_text(page) == "\u23f5 2 streams", 10, 0.25,
             text=lambda: f"status bar: {_status_text(page)!r}")
    # Snapshots update the rows in place: none is taken out of the page and put back (a row
    # moved between a press and its release loses the click, and its button the focus).
    page.evaluate(f"""() => {{
        window.rowMoves = 0;
        new MutationObserver(records => {{ window.rowMoves += records.length; }})
            .observe(document.querySelector('{PANEL} .jp-workbench-StreamsPanel-list'), {{childList: true}});
    }}""")
    first = _batches(page, "numbers")
    wait_for(lambda: _batches(page, "numbers") >= first + 3, 20, 0.25,
             text=lambda: f"batches did not grow: {first} -> {_batches(page, 'numbers')}")
    assert page.evaluate("() => window.rowMoves") == 0
    # Clearing every output (the cells' widgets and prints) does not stop the panel.
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    cleared = _batches(page, "numbers")
    wait_for(lambda: _batches(page, "numbers") >= cleared + 2, 20, 0.25,
             text=lambda: f"after clearing outputs the batches stay at {_batches(page, 'numbers')}")


#: The notebook's kernel runs a cell for a few seconds (not waited for); then its status.
JS_BUSY_KERNEL = """() => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  kernel.requestExecute({code: 'import time; time.sleep(4)', silent: false, store_history: false});
}"""


def test_stop_in_the_panel(page, lab):
    row = _row(page, "numbers")
    # Clicked while a cell runs: the kernel reads Stop once the cell ends, and the row says so.
    page.evaluate(JS_BUSY_KERNEL)
    wait_for(lambda: page.evaluate(JS_KERNEL_STATUS) == "busy", 10, 0.05, text="the kernel never went busy")
    row.locator(".jp-workbench-Stream-stop").click()
    note = row.locator(".jp-workbench-Stream-note")
    assert note.inner_text() == "Stops once the running cell ends: the kernel reads Stop between cells."
    wait_for(lambda: row.locator(".jp-workbench-Stream-status").inner_text() == "stopped", 30, 0.25,
             text=lambda: f"after Stop the row says {row.inner_text()!r}")
    assert row.locator(".jp-workbench-Stream-stop").is_disabled() and note.inner_text() == ""
    # A stopped stream's button is a plain disabled one, not the red of a stream still running.
    colour = "(selector) => getComputedStyle(document.querySelector(selector)).backgroundColor"
    stopped = page.evaluate(colour, f"{PANEL} .jp-workbench-Stream[data-stream='numbers'] .jp-workbench-Stream-stop")
    running = page.evaluate(colour, f"{PANEL} .jp-workbench-Stream[data-stream='letters'] .jp-workbench-Stream-stop")
    assert stopped != running and "jp-mod-warn" in (_row(page, "letters").locator(
        ".jp-workbench-Stream-stop").get_attribute("class") or "")
    wait_for(lambda: _status_text(page) == "\u23f5 1 stream", 10, 0.25,
             text=lambda: f"status bar after Stop: {_status_text(page)!r}")
    # Clicking the count shows the panel.
    page.evaluate("() => window.jupyterapp.shell.collapseRight()")
    wait_for(lambda: not page.locator(PANEL).is_visible(), 5, 0.1, text="the panel did not collapse")
    page.locator(STATUS).click()
    wait_for(lambda: page.locator(PANEL).is_visible(), 5, 0.1, text="clicking the status bar count did not show the panel")
    reported = page.evaluate(JS_KERNEL_PRINT, "import workbench\n"
                                              "print(dict(workbench.streams()[['name', 'status']].values))")
    assert reported == "{'numbers': 'stopped', 'letters': 'active'}"
    assert _row(page, "letters").locator(".jp-workbench-Stream-status").inner_text() == "active"

    # A Stop that Spark cannot carry out (the query runs on): the row says why, over the
    # snapshots of the batches that follow, and its Stop can be clicked again.
    assert page.evaluate(JS_KERNEL_PRINT, REFUSING_STOP) == "ok"
    letters = _row(page, "letters")
    stop = letters.locator(".jp-workbench-Stream-stop")
    stop.click()
    note = letters.locator(".jp-workbench-Stream-note")
    wait_for(lambda: note.inner_text() == "cannot stop 'letters': Spark could not stop letters", 15, 0.25,
             text=lambda: f"after a failed Stop the row says {letters.inner_text()!r}")
    batches = _batches(page, "letters")
    wait_for(lambda: _batches(page, "letters") >= batches + 2, 20, 0.25, text="letters ran no further batches")
    assert note.inner_text() == "cannot stop 'letters': Spark could not stop letters"
    assert stop.is_enabled() and stop.inner_text() == "Stop"
    assert letters.locator(".jp-workbench-Stream-status").inner_text() == "active"
    assert page.evaluate(JS_KERNEL_PRINT, "del workbench.stream('letters').stop; print('ok')") == "ok"


#: Makes the next stop() of ``letters`` fail as a stop Spark refuses (the query runs on).
REFUSING_STOP = """import workbench
letters = workbench.stream('letters')
def refuse(*args, **kwargs):
    raise RuntimeError('[STREAM_FAILED] Spark could not stop letters SQLSTATE: XXKST\\n\\tat org.apache.spark')
letters.stop = refuse
print('ok')"""


#: The kernel's count of Streams panel snapshots sent, and of ``letters``' batches.
SENT = ("print(get_ipython().magics_manager.registry['StreamMagics'].streams_panel.sent, "
        "__import__('workbench').stream('letters').progress.total)")


def test_a_hidden_panel_is_not_sent_each_batch(page, lab):
    def sent_and_batches() -> tuple[int, int]:
        sent, batches = page.evaluate(JS_KERNEL_PRINT, SENT).split()
        return int(sent), int(batches)

    page.evaluate("() => window.jupyterapp.shell.collapseRight()")
    wait_for(lambda: not page.locator(PANEL).is_visible(), 5, 0.1, text="the panel did not collapse")
    page.wait_for_timeout(1000)  # a snapshot the throttle held back may still go out
    sent, batches = sent_and_batches()
    wait_for(lambda: sent_and_batches()[1] >= batches + 4, 30, 0.25, text="letters ran no further batches")
    assert sent_and_batches()[0] == sent, "the kernel sent the hidden panel's page a snapshot per batch"
    assert _status_text(page) == "\u23f5 1 stream"  # the count still stands
    # Shown again: the row says the newest batch count at once (not the one it had when hidden).
    page.locator(STATUS).click()
    now = sent_and_batches()[1]
    wait_for(lambda: _batches(page, "letters") >= now, 5, 0.1,
             text=lambda: f"the shown panel says {_batches(page, 'letters')} batches, the kernel {now}")
    wait_for(lambda: _batches(page, "letters") >= now + 2, 20, 0.25, text="the shown panel stopped updating")

    # The panel shown in a browser tab in the background (headless Chromium never hides its
    # tabs: the page is told so, as the browser would): no snapshot per batch, no drawing.
    page.evaluate(JS_TAB_HIDDEN, True)
    try:
        wait_for(lambda: page.evaluate(JS_KERNEL_PRINT, DETAIL) == "[False]", 10, 0.25,
                 text=lambda: f"in a background tab the page's detail is {page.evaluate(JS_KERNEL_PRINT, DETAIL)}")
        page.wait_for_timeout(1000)
        sent, batches = sent_and_batches()
        drawn = _batches(page, "letters")
        wait_for(lambda: sent_and_batches()[1] >= batches + 4, 30, 0.25, text="letters ran no further batches")
        assert sent_and_batches()[0] == sent, "the kernel sent a background tab's page a snapshot per batch"
        assert _batches(page, "letters") == drawn, "the panel of a background tab drew the batches"
    finally:
        page.evaluate(JS_TAB_HIDDEN, False)
    now = sent_and_batches()[1]
    wait_for(lambda: _batches(page, "letters") >= now, 5, 0.1,
             text=lambda: f"the tab in front again, the panel says {_batches(page, 'letters')} batches, the kernel {now}")


#: The browser tab goes to the background (true) or comes back to the front (false).
JS_TAB_HIDDEN = """(hidden) => {
  if (hidden) {
    Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true});
    Object.defineProperty(document, 'hidden', {value: true, configurable: true});
  } else {
    delete document.visibilityState;
    delete document.hidden;
  }
  document.dispatchEvent(new Event('visibilitychange'));
}"""
#: Whether the kernel sends each page's reader a snapshot per batch.
DETAIL = "print([r.detail for r in get_ipython().magics_manager.registry['StreamMagics'].streams_panel._comms])"


def test_clicking_a_stream_activates_its_cell(page, lab):
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 3; }")
    def active_after_a_click() -> bool:
        # The panel re-renders its rows as the streams report; a click on a row being
        # replaced can land on the old one, so the click is made again until it takes.
        _row(page, "letters").locator(".jp-workbench-Stream-name").click()
        return page.evaluate("() => window.jupyterapp.shell.currentWidget.content.activeCellIndex") == 2

    wait_for(active_after_a_click, 20, 1.0, text="clicking the letters row did not activate its cell")
    # The cell that started `numbers` is deleted: the row says so, nothing else happens.
    page.evaluate("() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.deleteCell(1)")
    _row(page, "numbers").locator(".jp-workbench-Stream-name").click()
    note = _row(page, "numbers").locator(".jp-workbench-Stream-note")
    wait_for(lambda: "no longer in this notebook" in note.inner_text(), 10, 0.1,
             text=lambda: f"the row's note: {note.inner_text()!r}")


def _spark_ui_tab(page: Any) -> Any:
    return page.locator(".jp-MainAreaWidget:visible .jp-workbench-SparkUI")


def test_spark_ui_tab_through_the_proxy(page, lab):
    run_id = page.evaluate(JS_KERNEL_PRINT, "print(workbench.stream('letters').run_id)")
    _row(page, "letters").locator(".jp-workbench-Stream-sparkui").click()
    frame = page.frame_locator(".jp-workbench-SparkUI-frame iframe")

    def shown() -> str:
        try:
            return frame.locator("body").inner_text(timeout=1000)
        except Exception:  # the frame is not there yet (the tab checks the page first)
            return ""

    wait_for(lambda: "Streaming Query Statistics" in shown() and f"RunId: {run_id}" in shown(), 60, 0.5,
             text=lambda: f"the Spark UI tab shows {shown()!r}")
    title = page.evaluate("() => window.jupyterapp.shell.currentWidget.title.label")
    assert title == "letters: Spark UI"
    src = page.locator(".jp-workbench-SparkUI-frame iframe").get_attribute("src")
    found = re.search(r"/proxy/(\d+)/StreamingQuery/statistics/\?id=", src or "")
    assert found, f"the frame's address is {src!r}"
    port = int(found.group(1))
    # The same page without the token (nor the browser's login cookie) is refused.
    opener = urllib.request.build_opener(_NoRedirect())
    try:
        response = opener.open(f"{lab.url}/proxy/{port}/StreamingQuery/", timeout=10)
        status, location = response.status, response.headers.get("Location", "")
    except urllib.error.HTTPError as error:
        status, location = error.code, error.headers.get("Location", "")
    assert status == 403 or (status in (301, 302) and "/login" in location), (status, location)
    page.evaluate("() => window.jupyterapp.commands.execute('application:close')")


def test_spark_ui_button_widget(page, lab):
    _open(page, lab, "panel.ipynb")
    # Outputs were cleared above: run the button's cell again.
    assert page.evaluate(JS_ACTIVATE_CELL, "SparkUIButton(") >= 0
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-cell'); }")
    button = page.locator(".jp-Notebook .jp-workbench-SparkUIButton button")
    wait_for(lambda: button.count() == 1, 30, 0.25, text="the SparkUIButton widget did not render")
    assert button.inner_text() == "Spark UI" and button.is_enabled()
    button.click()
    frame = page.frame_locator(".jp-MainAreaWidget:visible .jp-workbench-SparkUI-frame iframe")

    def shown() -> str:
        try:
            return frame.locator("body").inner_text(timeout=1000)
        except Exception:  # the frame is not there yet
            return ""

    wait_for(lambda: "Streaming Query" in shown() and "letters" in shown(), 60, 0.5,
             text=lambda: f"the button's tab shows {_spark_ui_tab(page).inner_text()!r}")
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.title.label") == "all queries"
    page.evaluate("() => window.jupyterapp.commands.execute('application:close')")


#: A stream each of whose batches runs a Spark job for 45 s (its row sleeps), started without a cell.
SLOW_QUERY = ("spark.readStream.format('rate-micro-batch').option('rowsPerBatch', 1).load()"
              ".selectExpr(\"reflect('java.lang.Thread', 'sleep', cast(45000 as bigint)) AS s\")")
START_SLOW = f"get_ipython().run_cell_magic('stream', 'slow --no-monitor', {SLOW_QUERY!r})\nprint('ok')"
OPEN_ROOT = ("(port) => window.jupyterapp.commands.execute('workbench:open-spark-ui', "
             "{port, path: '/', title: 'Spark UI root'})")
OPEN_JOBS = ("(port) => window.jupyterapp.commands.execute('workbench:open-spark-ui', "
             "{port, path: '/jobs/', title: 'Spark jobs'})")
SPARK_UI_FRAME = ".jp-MainAreaWidget:visible .jp-workbench-SparkUI-frame iframe"


def _frame_text(page: Any) -> str:
    try:
        return page.frame_locator(SPARK_UI_FRAME).locator("body").inner_text(timeout=1000)
    except Exception:  # the frame is not there yet (the tab checks the page first)
        return ""


def _allow_404s(browser: tuple[Any, Console]) -> None:
    """Forget the page's 404s: the browser fetched the targets of Spark's redirects outside
    the proxy (the Jupyter server's 404) before the tab sent the frame back under it."""
    console = browser[1]
    console.errors = [error for error in console.errors
                      if "the server responded with a status of 404 (Not Found)" not in error]


def _spark_ui_port(page: Any) -> int:
    return int(page.evaluate(JS_KERNEL_PRINT, "from workbench.views.sparkui import ui_port\n"
                                              "print(ui_port(spark.sparkContext.uiWebUrl))"))


def test_spark_ui_tab_follows_the_root_link(page, lab, browser):
    port = _spark_ui_port(page)
    # Spark answers its root with a redirect to /jobs/ that leaves the proxy's prefix: the tab
    # shows Spark's jobs page, under the proxy, not the Jupyter server's "404 Not Found".
    page.evaluate(OPEN_ROOT, port)
    try:
        wait_for(lambda: "Spark Jobs" in _frame_text(page), 60, 0.5,
                 text=lambda: f"the Spark UI root shows {_frame_text(page)[:300]!r}")
        where = page.locator(SPARK_UI_FRAME).evaluate("frame => frame.contentWindow.location.pathname")
        assert where.endswith(f"/proxy/{port}/jobs/"), where
    finally:
        page.evaluate("() => window.jupyterapp.commands.execute('application:close')")
    _allow_404s(browser)


def test_spark_ui_tab_kill_links(page, lab, browser):
    port = _spark_ui_port(page)
    assert page.evaluate(JS_KERNEL_PRINT, START_SLOW).endswith("ok")
    wait_for(lambda: _row(page, "slow").count() == 1, 30, 0.25, text=lambda: f"the panel says {_panel_text(page)!r}")
    page.evaluate(OPEN_JOBS, port)
    # A running job's "(kill)" link asks to confirm, then kills the job (and so fails its stream).
    asked: list[str] = []

    def confirm(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    kill = page.frame_locator(SPARK_UI_FRAME).locator("a.kill-link")

    def a_job_to_kill() -> bool:
        if kill.count():
            return True
        if "Spark Jobs" in _frame_text(page):
            page.evaluate(OPEN_JOBS, port)  # loaded before the job started: load the page again
        return False

    page.on("dialog", confirm)
    try:
        wait_for(a_job_to_kill, 60, 1.0, text=lambda: f"no job to kill: {_frame_text(page)[:300]!r}")
        kill.first.click()
        wait_for(lambda: asked, 10, 0.1, text="the (kill) link asked nothing")
        assert "kill" in asked[0].lower(), asked
        status = _row(page, "slow").locator(".jp-workbench-Stream-status")
        wait_for(lambda: status.inner_text() == "failed", 60, 0.5,
                 text=lambda: f"after (kill) the panel says {_panel_text(page)!r}")
        # Spark's answer to the kill (a redirect to /jobs/) came back under the proxy too.
        wait_for(lambda: "Spark Jobs" in _frame_text(page), 30, 0.5,
                 text=lambda: f"after (kill) the tab shows {_frame_text(page)[:300]!r}")
    finally:
        page.remove_listener("dialog", confirm)
        page.evaluate("() => window.jupyterapp.commands.execute('application:close')")
    _allow_404s(browser)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@pytest.mark.parametrize(("port", "says"), [
    ("free", "Nothing answers as a Spark UI on port"),
    (0, "This session has no Spark UI"),
])
def test_spark_ui_tab_when_there_is_no_spark_ui(page, lab, port, says):
    port = free_port() if port == "free" else port
    page.evaluate("(port) => window.jupyterapp.commands.execute('workbench:open-spark-ui', "
                  "{port, path: '/StreamingQuery/', title: 'nothing'})", port)
    message = page.locator(".jp-MainAreaWidget:visible .jp-workbench-SparkUI-message")
    wait_for(lambda: message.count() and says in message.inner_text(), 30, 0.25,
             text=lambda: f"the tab says {_spark_ui_tab(page).inner_text()!r}")
    assert message.get_attribute("data-state") == "error"
    assert page.locator(".jp-MainAreaWidget:visible .jp-workbench-SparkUI-frame").count() == 0
    page.evaluate("() => window.jupyterapp.commands.execute('application:close')")


def test_closing_and_reopening_the_notebook(page, lab):
    # Close every notebook (saved first, so no dialog asks); the kernels keep running.
    page.evaluate("""async () => {
        const app = window.jupyterapp;
        for (const widget of [...app.shell.widgets('main')]) {
            if (widget.context) { await widget.context.save(); }
            widget.close();
        }
    }""")
    wait_for(lambda: "panel.ipynb was closed while 1 stream was running" in _panel_text(page), 15, 0.25,
             text=lambda: f"with no notebook open the panel says {_panel_text(page)!r}")
    _open(page, lab, "panel.ipynb")
    wait_for(lambda: _batches(page, "letters") >= 1, 30, 0.25,
             text=lambda: f"after reopening the panel says {_panel_text(page)!r}")
    # The closed notebook's page told its kernel: the kernel sends snapshots to the reopened one only.
    comms = "print(get_ipython().magics_manager.registry['StreamMagics'].streams_panel.comms)"
    assert page.evaluate(JS_KERNEL_PRINT, comms) == "1"


JS_CLOSE_CURRENT = """async () => {
    const widget = window.jupyterapp.shell.currentWidget;
    await widget.context.save();
    widget.close();
}"""
JS_CURRENT_PATH = "() => { const w = window.jupyterapp.shell.currentWidget; return w && w.context ? w.context.path : null; }"


def test_a_notebook_closed_while_another_is_active(page, lab):
    _open(page, lab, "plain.ipynb")
    _open(page, lab, "panel.ipynb")
    wait_for(lambda: _batches(page, "letters") >= 1, 30, 0.25, text=lambda: f"the panel says {_panel_text(page)!r}")
    note = page.locator(f"{PANEL} .jp-workbench-StreamsPanel-closedNote")
    said = "panel.ipynb was closed while 1 stream was running; they keep running in its kernel"
    # A second view of the notebook (File > New View), closed: the first still shows it.
    views = "() => [...window.jupyterapp.shell.widgets('main')].filter(w => w.context && w.context.path === 'panel.ipynb').length"
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:clone')")
    wait_for(lambda: page.evaluate(views) == 2, 15, 0.25, text="no second view of panel.ipynb")
    wait_for(lambda: _batches(page, "letters") >= 1, 30, 0.25, text=lambda: f"the second view's panel says {_panel_text(page)!r}")
    page.evaluate("() => window.jupyterapp.shell.currentWidget.close()")
    wait_for(lambda: page.evaluate(views) == 1, 15, 0.25, text="the second view did not close")
    page.wait_for_timeout(1000)
    assert note.count() == 0, f"closing one of two views, the panel says {_panel_text(page)!r}"
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", "panel.ipynb")
    wait_for(lambda: page.evaluate(JS_CURRENT_PATH) == "panel.ipynb", 15, 0.25, text="panel.ipynb is not current")
    page.evaluate(JS_CLOSE_CURRENT)
    wait_for(lambda: page.evaluate(JS_CURRENT_PATH) == "plain.ipynb", 15, 0.25, text="plain.ipynb did not become current")
    # The panel shows plain.ipynb's kernel, and says what became of panel.ipynb's stream.
    wait_for(lambda: "run %load_ext workbench" in _panel_text(page) and said in _panel_text(page), 15, 0.25,
             text=lambda: f"with plain.ipynb active after closing panel.ipynb the panel says {_panel_text(page)!r}")
    # It stays until dismissed.
    note.locator("button").click()
    wait_for(lambda: note.count() == 0, 5, 0.1, text=lambda: f"dismissed, the panel says {_panel_text(page)!r}")
    # Or until the notebook is open again (its stream is listed then).
    _open(page, lab, "panel.ipynb")
    page.evaluate(JS_CLOSE_CURRENT)
    wait_for(lambda: said in _panel_text(page), 15, 0.25, text=lambda: f"the panel says {_panel_text(page)!r}")
    _open(page, lab, "panel.ipynb")
    wait_for(lambda: _batches(page, "letters") >= 1 and note.count() == 0, 30, 0.25,
             text=lambda: f"reopened, the panel says {_panel_text(page)!r}")


def test_a_page_back_from_a_lost_connection(page, lab):
    # A connection that dropped for good (a laptop asleep: the page's reconnect attempts ran
    # out, as the private call says) and the user's "Reconnect to Kernel": the page opens a new
    # comm, the kernel never heard the first closed.
    page.evaluate("""async () => {
        const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
        kernel._updateConnectionStatus('disconnected');
        await kernel.reconnect();
    }""")
    before = _batches(page, "letters")
    wait_for(lambda: _batches(page, "letters") > before, 30, 0.25,
             text=lambda: f"after reconnecting the panel says {_panel_text(page)!r}")
    # The kernel closed the page's old comm: one reader, one snapshot per change, as before.
    comms = "print(get_ipython().magics_manager.registry['StreamMagics'].streams_panel.comms)"
    assert page.evaluate(JS_KERNEL_PRINT, comms) == "1"


def _restored(page: Any) -> bool:
    """Whether JupyterLab has restored its layout in ``page``."""
    try:
        return page.evaluate("async () => { if (!window.jupyterapp) return false; "
                             "await window.jupyterapp.restored; return true; }")
    except Exception:  # the page navigated meanwhile (the token in the address became a cookie)
        return False


def _reload(page: Any) -> None:
    """Reload the page and wait until JupyterLab has restored its layout."""
    page.reload()
    wait_for(lambda: _restored(page), 60, 0.1, text="JupyterLab did not come back after a reload")


def _saved_side_panel(lab: LabServer) -> str | None:
    """The panel JupyterLab's saved layout shows in the right side bar (None: none, or collapsed)."""
    for value in lab.api("GET", "/lab/api/workspaces")["workspaces"]["values"]:
        right = value.get("data", {}).get("layout-restorer:data", {}).get("right") or {}
        if not right.get("collapsed", True):
            return right.get("current")
    return None


def test_the_panel_shows_again_after_a_reload(page, lab):
    _open(page, lab, "panel.ipynb")  # shows the panel
    wait_for(lambda: _saved_side_panel(lab) == "workbench-streams", 20, 0.25,
             text=lambda: f"JupyterLab's saved layout shows {_saved_side_panel(lab)!r} in the right side bar")
    _reload(page)
    page.wait_for_function(JS_KERNEL_IDLE, timeout=90_000, polling=250)
    wait_for(lambda: page.locator(PANEL).is_visible() and _batches(page, "letters") >= 1, 30, 0.25,
             text=lambda: "after a reload the Streams panel is " +
             (repr(_panel_text(page)) if page.locator(PANEL).is_visible() else "not shown"))


COMMS = "print(get_ipython().magics_manager.registry['StreamMagics'].streams_panel.comms)"


def _comms(page: Any) -> str:
    return page.evaluate(JS_KERNEL_PRINT, COMMS)


#: The kernel's subshells: JupyterLab sends each comm target's messages over one of its own
#: (a thread of the kernel's), deleted when the page's last comm of that target closes.
SUBSHELLS = ("k = get_ipython().kernel; t = getattr(k, 'shell_channel_thread', None)\n"
             "print(*(t.manager.list_subshell() if t is not None else []))")
#: The subshell of the page's Streams comm (null while it has none).
JS_STREAMS_SUBSHELL = """() => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const comm = [...kernel._comms.values()].find(c => c.targetName === 'workbench.streams');
  return comm ? comm.subshellId : null;
}"""


def test_reloads_leave_one_reader_per_page(page, lab):
    _open(page, lab, "panel.ipynb")
    left: list[str] = []
    for _ in range(3):
        wait_for(lambda: _batches(page, "letters") >= 1, 30, 0.25, text=lambda: f"the panel says {_panel_text(page)!r}")
        subshell = wait_for(lambda: page.evaluate(JS_STREAMS_SUBSHELL), 15, 0.25, text="the Streams comm has no subshell")
        _reload(page)
        _open(page, lab, "panel.ipynb")
        left.append(subshell)
    wait_for(lambda: _batches(page, "letters") >= 1, 30, 0.25, text=lambda: f"the panel says {_panel_text(page)!r}")
    wait_for(lambda: _comms(page) == "1", 15, 0.5,
             text=lambda: f"after 3 reloads of one page the kernel has {_comms(page)} Streams comms")
    # Nor the subshells of the pages before (each a thread of the kernel's, kept for its life),
    # those loaded in this test: the module's first page has a history of its own (a lost
    # connection...). The widget manager's jupyter.widget subshells stay, no doing of the panel.
    left = left[1:]
    wait_for(lambda: not set(left) & set(page.evaluate(JS_KERNEL_PRINT, SUBSHELLS).split()), 15, 0.5,
             text=lambda: f"after 3 reloads the kernel keeps the Streams subshells "
                          f"{sorted(set(left) & set(page.evaluate(JS_KERNEL_PRINT, SUBSHELLS).split()))}")


PUBLISHER = "p = get_ipython().magics_manager.registry['StreamMagics'].streams_panel"
#: The id of the page's Streams comm.
JS_STREAMS_COMM = """() => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  return [...kernel._comms.values()].find(c => c.targetName === 'workbench.streams').commId;
}"""


def test_a_window_opened_after_a_reload_has_its_own_comm(page, lab):
    # The page reloaded with no notebook open, then opens a window (which copies the tab's
    # sessionStorage): each window's comm has a name of its own, and neither replaces the other's.
    page.evaluate("""async () => {
        for (const widget of [...window.jupyterapp.shell.widgets('main')]) {
            if (widget.context) { await widget.context.save(); }
            widget.close();
        }
    }""")

    def saved_notebooks() -> list[str]:
        return [key for value in lab.api("GET", "/lab/api/workspaces")["workspaces"]["values"]
                for key in value.get("data", {}) if key.startswith("notebook:")]

    wait_for(lambda: not saved_notebooks(), 20, 0.25, text=lambda: f"the saved layout still opens {saved_notebooks()}")
    _reload(page)
    assert page.evaluate("() => [...window.jupyterapp.shell.widgets('main')].filter(w => w.context).length") == 0
    # The tab's id is taken out of its storage as the page starts, not when a notebook opens.
    assert page.evaluate("() => sessionStorage.getItem('spark-streaming-workbench:tab')") is None
    with page.expect_popup() as popup_info:
        page.evaluate("(url) => { window.open(url); }", lab.url + "/lab")
    popup = popup_info.value
    popup_console = Console(popup)
    try:
        wait_for(lambda: _restored(popup), 60, 0.1, text="JupyterLab did not load in the second window")
        _open(page, lab, "panel.ipynb")
        wait_for(lambda: _batches(page, "letters") >= 1, 30, 0.25, text=lambda: f"the panel says {_panel_text(page)!r}")
        _open(popup, lab, "panel.ipynb")
        wait_for(lambda: _batches(popup, "letters") >= 1, 30, 0.25,
                 text=lambda: f"the second window's panel says {_panel_text(popup)!r}")
        wait_for(lambda: _comms(page) == "2", 15, 0.5, text=lambda: f"two windows, the kernel has {_comms(page)} comms")
        before = _batches(page, "letters")
        wait_for(lambda: _batches(page, "letters") >= before + 2, 20, 0.25,
                 text=lambda: f"the first window's panel stopped: {_panel_text(page)!r}")
        pages = page.evaluate(JS_KERNEL_PRINT, f"{PUBLISHER}\nprint(len({{r.page for r in p._comms}}))")
        assert pages == "2", f"the two windows' comms have {pages} names"
        popup_comm = popup.evaluate(JS_STREAMS_COMM)
    finally:
        popup.close()
    # The kernel forgets every reader but this page's: a close sent as a window or notebook goes
    # may be lost with its connection, and the reader would stay for the kernel's life.
    mine = page.evaluate(JS_STREAMS_COMM)
    page.evaluate(JS_KERNEL_PRINT, f"{PUBLISHER}\nfor r in p._readers():\n"
                                   f"    if r.comm.comm_id != {mine!r}: p._forget(r.comm); p._detach(r.comm)\nprint('ok')")
    assert not popup_console.take()


JS_RUN_UNTIL_FLAG = """(code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  kernel.requestExecute({code, silent: false, store_history: false});
}"""


def test_a_page_reloaded_while_a_cell_runs(page, lab):
    _open(page, lab, "panel.ipynb")
    page.evaluate(JS_RUN_UNTIL_FLAG, WAIT_FOR_FLAG)
    waiting = "The kernel is running a cell: its streams show here once the cell ends"
    try:
        wait_for(lambda: page.evaluate(JS_KERNEL_STATUS) == "busy", 10, 0.05, text="the kernel never went busy")
        page.reload()
        wait_for(lambda: page.evaluate("() => !!window.jupyterapp") and page.evaluate(JS_CURRENT_PATH) == "panel.ipynb",
                 60, 0.25, text="panel.ipynb did not come back after the reload")
        page.evaluate("() => window.jupyterapp.commands.execute('workbench:show-streams')")
        wait_for(lambda: waiting in _panel_text(page), 30, 0.25,
                 text=lambda: f"reloaded while a cell runs, the panel says {_panel_text(page)!r}")
        assert _status_text(page) == "\u23f5 streams after this cell"
    finally:
        (lab.server_root / FLAG).write_text("")
    wait_for(lambda: _batches(page, "letters") >= 1, 60, 0.25,
             text=lambda: f"once the cell ended the panel says {_panel_text(page)!r}")
    assert waiting not in _panel_text(page)
    wait_for(lambda: _comms(page) == "1", 15, 0.5, text=lambda: f"the kernel has {_comms(page)} Streams comms")


def test_spark_ui_after_the_session_stopped(page, lab):
    port = int(page.evaluate(JS_KERNEL_PRINT, "from workbench.views.sparkui import ui_port\n"
                                              "print(ui_port(spark.sparkContext.uiWebUrl))"))
    assert port > 0
    button = _row(page, "letters").locator(".jp-workbench-Stream-sparkui")
    assert button.is_enabled()
    assert page.evaluate(JS_KERNEL_PRINT, "workbench.stop_all(); spark.stop(); print('ok')") == "ok"
    # The kernel reads the UI's port again every few seconds: the stopped session has none.
    wait_for(button.is_disabled, 20, 0.25,
             text=lambda: f"after spark.stop() the row's Spark UI button is enabled: {_panel_text(page)!r}")
    assert "the Spark session has stopped" in (button.get_attribute("title") or "")
    note = page.locator(f"{PANEL} .jp-workbench-StreamsPanel-nosparkui")
    assert note.is_visible() and note.inner_text().startswith("No Spark UI to open: the Spark session has stopped")
    assert _row(page, "letters").locator(".jp-workbench-Stream-status").inner_text() == "stopped"
    # A tab on the old port (e.g. one left open, then reloaded) says nothing answers there.
    page.evaluate("(port) => window.jupyterapp.commands.execute('workbench:open-spark-ui', "
                  "{port, path: '/StreamingQuery/', title: 'stopped'})", port)
    message = page.locator(".jp-MainAreaWidget:visible .jp-workbench-SparkUI-message")
    wait_for(lambda: message.count() and f"Nothing answers as a Spark UI on port {port}" in message.inner_text(),
             30, 0.25, text=lambda: f"the tab says {_spark_ui_tab(page).inner_text()!r}")
    assert "the Spark session has stopped" in message.inner_text()
    assert page.locator(".jp-MainAreaWidget:visible .jp-workbench-SparkUI-frame").count() == 0
    page.evaluate("() => window.jupyterapp.commands.execute('application:close')")


def test_kernel_restart_empties_the_panel(page, lab):
    # Stopped first: a restart gives the kernel 5 s to exit, and stopping a running stream and
    # Spark can take longer on a busy machine (the kernel is then killed before it cleans up).
    assert page.evaluate(JS_KERNEL_PRINT, "workbench.stop_all(); print('ok')") == "ok"
    wait_for(lambda: _row(page, "letters").locator(".jp-workbench-Stream-status").inner_text() == "stopped",
             15, 0.25, text=lambda: f"letters did not stop: {_panel_text(page)!r}")
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart(); }")
    wait_for(lambda: _row(page, "letters").count() == 0, 30, 0.25,
             text=lambda: f"after a restart the panel still shows {_panel_text(page)!r}")
    wait_for(lambda: "run %load_ext workbench" in _panel_text(page), 60, 0.25,
             text=lambda: f"after the restart the panel says {_panel_text(page)!r}")
    assert "The kernel was restarted: its streams are gone." in _panel_text(page)
    assert _status_text(page) == ""
    page.wait_for_timeout(1000)  # nothing arrives late from the old kernel
    assert _row(page, "letters").count() == 0


def _monitor_header(monitor: Any) -> str:
    return monitor.locator(".widget-html").first.inner_text()


def _monitor_caption(monitor: Any) -> str:
    caption = monitor.locator(".workbench-chart-caption")
    return caption.evaluate(JS_CAPTION_TEXT) if caption.count() else ""


def test_a_monitors_stop_during_a_cell_and_after_a_restart(page, lab):
    _open(page, lab, "monitor.ipynb")
    # Runs the monitored stream, then a cell that waits for the test, then a second monitor.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    monitors = page.locator(".jp-NotebookPanel:visible .workbench-monitor")
    first = monitors.nth(0)
    try:
        wait_for(lambda: monitors.count() >= 1 and re.match(r"batch \d", _monitor_caption(first)), 120, 0.25,
                 text=lambda: f"the monitor did not show a batch: {monitors.all_inner_texts()!r}")
        # The kernel runs the waiting cell (it printed).
        wait_for(lambda: page.evaluate(JS_CELLS_SHOWING, "waiting for the test") == [2], 60, 0.1,
                 text="the waiting cell did not start")
        stop = first.locator("button.mod-danger")
        stop.click()
        # The kernel reads the click once the cell ends: the button says so at once.
        pending = "Stopping when the cell ends\u2026"
        wait_for(lambda: stop.inner_text() == pending, 5, 0.05, text=lambda: f"after Stop the button says {stop.inner_text()!r}")
        assert stop.is_disabled()
        assert "active" in _monitor_header(first)
    finally:
        (lab.server_root / FLAG).write_text("")
    wait_for(lambda: "stopped" in _monitor_header(first), 60, 0.25,
             text=lambda: f"once the cell ended the monitor says {_monitor_header(first)!r}")
    second = monitors.nth(1)
    wait_for(lambda: monitors.count() == 2, 120, 0.25, text="the second monitor did not render")
    scroll_into_view(second.locator(".workbench-chart-grid"))  # a grid out of view draws nothing
    wait_for(lambda: monitors.count() == 2 and re.match(r"batch \d", _monitor_caption(second)), 120, 0.25,
             text=lambda: f"the second monitor did not show a batch: {monitors.all_inner_texts()!r}")
    # After a restart the monitors say their kernel is gone, their buttons are disabled, and
    # their charts stay as they were. (The stream is stopped first: a restart gives the kernel
    # 5 s to exit, and stopping a stream and Spark can take longer on a busy machine.)
    assert page.evaluate(JS_KERNEL_PRINT, "import workbench\nworkbench.stop_all(); print('ok')") == "ok"
    wait_for(lambda: "stopped" in _monitor_header(second), 30, 0.25, text=lambda: _monitor_header(second))
    pause = second.locator("button", has_text="Pause updates")
    assert pause.is_enabled()
    before = set(os.listdir(lab.temp))
    spark = _kernel_process(lab, "monitor.ipynb").children(recursive=True)
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart(); }")
    gone = second.locator(".workbench-kernel-gone")
    wait_for(lambda: gone.count() == 1, 30, 0.25, text=lambda: f"after a restart the monitor says {second.inner_text()!r}")
    assert gone.inner_text() == "The kernel restarted: this monitor no longer updates."
    caption = _monitor_caption(second)
    page.wait_for_function(JS_KERNEL_IDLE, timeout=90_000, polling=250)
    for button in second.locator("button").all():
        assert button.is_disabled(), f"{button.inner_text()!r} is enabled after the restart"
    assert second.locator(".js-plotly-plot").count() == 4 and _monitor_caption(second) == caption
    assert first.locator(".workbench-kernel-gone").text_content() == gone.inner_text()
    # The old kernel's Spark ends with it; should the kernel take too long to exit and be
    # killed, it leaves its temporary folder.
    _, alive = psutil.wait_procs(spark, timeout=60)
    assert not alive, f"still running after the restart: {alive}"
    for name in set(os.listdir(lab.temp)) - before:
        shutil.rmtree(lab.temp / name, ignore_errors=True)


def _kernel_process(lab: LabServer, notebook: str) -> psutil.Process:
    """The process of the kernel serving ``notebook`` (found by its connection file)."""
    sessions = lab.api("GET", "/api/sessions")
    kernel_id = next(s["kernel"]["id"] for s in sessions if s["path"].endswith(notebook))
    assert lab.process is not None
    for process in psutil.Process(lab.process.pid).children(recursive=True):
        if any(f"kernel-{kernel_id}.json" in part for part in process.cmdline()):
            return process
    raise AssertionError(f"no process for the kernel {kernel_id} of {notebook}")


def test_a_killed_kernel(page, lab):
    before = set(os.listdir(lab.temp))
    _open(page, lab, "kill.ipynb")
    _run_all(page)
    wait_for(lambda: _batches(page, "ticks") >= 1, 60, 0.25,
             text=lambda: f"the panel did not list ticks: {_panel_text(page)!r}")
    wait_for(lambda: _status_text(page) == "\u23f5 1 stream", 10, 0.25,
             text=lambda: f"status bar: {_status_text(page)!r}")
    kernel = _kernel_process(lab, "kill.ipynb")
    spark = kernel.children(recursive=True)  # the JVM and its Python workers
    family = family_of(kernel.pid)
    assert "java" in family.values(), f"no Spark JVM under the kernel: {family}"
    kernel.send_signal(signal.SIGKILL)
    died = "The kernel died while 1 stream was running: they are gone with it."
    wait_for(lambda: died in _panel_text(page), 30, 0.25,
             text=lambda: f"after the kernel was killed the panel says {_panel_text(page)!r}")
    assert _row(page, "ticks").count() == 0
    # The server restarts the kernel; JupyterLab says so in a dialog of its own.
    dialog = page.locator(".jp-Dialog", has_text="appears to have died")
    wait_for(lambda: dialog.count() == 1, 30, 0.25, text="JupyterLab did not say the kernel died")
    dialog.locator(".jp-Dialog-button.jp-mod-accept").click()
    wait_for(lambda: "run %load_ext workbench" in _panel_text(page), 90, 0.25,
             text=lambda: f"after the automatic restart the panel says {_panel_text(page)!r}")
    assert died in _panel_text(page)  # still says what became of the streams
    assert _status_text(page) == ""
    # Spark's JVM ends with the kernel (it exits when its parent's pipe closes).
    _, alive = psutil.wait_procs(spark, timeout=60)
    assert not alive, f"still running after the kernel was killed: {alive}"
    # A killed process cleans nothing up: remove the temporary folder the dead kernel left
    # (its checkpoints), so the server's clean shut-down is judged on everything else.
    for name in set(os.listdir(lab.temp)) - before:
        shutil.rmtree(lab.temp / name, ignore_errors=True)


def test_spark_connect_has_no_spark_ui(page, lab):
    _open(page, lab, "connect.ipynb")
    try:
        _run_all(page)
        wait_for(lambda: _batches(page, "remote") >= 1, 90, 0.25,
                 text=lambda: f"the panel did not list the Connect stream: {_panel_text(page)!r}")
        assert page.evaluate(JS_KERNEL_PRINT, "print(type(spark).__module__)").startswith("pyspark.sql.connect")
        button = _row(page, "remote").locator(".jp-workbench-Stream-sparkui")
        assert button.is_disabled() and "Spark Connect session" in (button.get_attribute("title") or "")
        note = page.locator(f"{PANEL} .jp-workbench-StreamsPanel-nosparkui")
        assert note.is_visible() and "Spark Connect session" in note.inner_text()
        # The monitor's own Spark UI button is disabled too, and says why.
        monitor_button = page.locator(".jp-NotebookPanel:visible .workbench-monitor .jp-workbench-SparkUIButton button")
        wait_for(lambda: monitor_button.count() == 1, 30, 0.25, text="the monitor's Spark UI button did not render")
        assert monitor_button.is_disabled() and "Spark Connect" in (monitor_button.get_attribute("title") or "")
    finally:
        # Stopped here: a kernel shut down with a running Connect stream may take longer to
        # exit than the server waits, and a killed kernel leaves its temporary folder.
        assert page.evaluate(JS_KERNEL_PRINT, "workbench.stop_all(); print('ok')") == "ok"
