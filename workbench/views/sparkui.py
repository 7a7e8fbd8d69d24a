"""The "Spark UI" button: opens a page of the Spark UI in a JupyterLab tab.

:class:`SparkUIButton` is an anywidget (its small ``_esm`` is built from
``extensions/src/anywidget/sparkui_button.ts``, see :mod:`workbench.views.widget_code`). In
JupyterLab (or Notebook 7) with the workbench's extension, clicking it runs the extension's
``workbench:open-spark-ui`` command, which shows the page through the Jupyter server's
``/proxy/<port>/`` route (jupyter-server-proxy, behind the server's token), so the Spark UI
keeps listening on 127.0.0.1 only. In a front end without the extension (VS Code, Colab)
the button is disabled and its tooltip says where it works. :func:`ui_port` and :func:`statistics_path` turn what
Spark reports into the button's ``port`` and ``path``; neither touches Spark.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

import anywidget
from traitlets import Int, Unicode, validate

from .widget_code import esm

__all__ = ["SparkUIButton", "ui_port", "statistics_path", "NO_UI_REASON"]

#: Tooltip of a disabled button when the session has no Spark UI.
NO_UI_REASON = "No Spark UI: Spark is not running here, or this is a Spark Connect session (it has none)"


def ui_port(url: str | None) -> int:
    """The port of the Spark UI at ``url`` (``sparkContext.uiWebUrl``); 0 when there is none.

    Parameters
    ----------
    url : str or None
        What ``spark.sparkContext.uiWebUrl`` returned; None on Spark Connect, before Spark
        starts, or with ``spark.ui.enabled=false``.

    Returns
    -------
    int
        The TCP port, or 0 meaning "no Spark UI".

    Examples
    --------
    >>> ui_port("http://127.0.0.1:4041")
    4041
    >>> ui_port(None), ui_port("not a url")
    (0, 0)
    """
    if not url:
        return 0
    try:
        port = urlsplit(url.strip()).port
    except ValueError:  # a port out of range
        return 0
    return port or 0


def statistics_path(run_id: str) -> str:
    """The Spark UI path of one run's "Streaming Query Statistics" page.

    Examples
    --------
    >>> statistics_path("3f1c0a4e-0000-4000-8000-000000000000")
    '/StreamingQuery/statistics/?id=3f1c0a4e-0000-4000-8000-000000000000'
    """
    return f"/StreamingQuery/statistics/?id={quote(str(run_id), safe='-')}"


class SparkUIButton(anywidget.AnyWidget):
    """A small "Spark UI" button that opens a Spark UI page in a JupyterLab tab.

    Opening the page needs the workbench's JupyterLab extension (installed with the
    package); without it the button is disabled and says so. With ``port`` 0 the button is
    disabled and ``reason`` is its tooltip.

    Parameters
    ----------
    port : int, default 0
        The Spark UI's port on the kernel's machine (see :func:`ui_port`); 0 for none.
    path : str, default "/"
        The page, e.g. ``statistics_path(handle.run_id)``.
    title : str, default "Spark UI"
        The tab's title.
    reason : str
        The tooltip while there is no UI to open.

    Examples
    --------
    >>> button = SparkUIButton(port=ui_port("http://127.0.0.1:4040"),
    ...                        path=statistics_path("run-1"), title="numbers: Spark UI")
    >>> button.port, button.path
    (4040, '/StreamingQuery/statistics/?id=run-1')
    """

    _esm = esm("sparkui_button.js")

    port = Int(0, help="The Spark UI's port on the kernel's machine; 0 when there is no Spark UI.").tag(sync=True)
    path = Unicode("/", help="The Spark UI page to open, starting with '/'.").tag(sync=True)
    title = Unicode("Spark UI", help="The title of the tab the page opens in.").tag(sync=True)
    reason = Unicode(NO_UI_REASON, help="Tooltip of the disabled button when port is 0.").tag(sync=True)

    @validate("port")
    def _check_port(self, proposal: dict) -> int:
        port = proposal["value"]
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be a TCP port (1-65535) or 0 for no Spark UI, got {port}")
        return port

    @validate("path")
    def _check_path(self, proposal: dict) -> str:
        path = proposal["value"] or "/"
        if not path.startswith("/"):
            raise ValueError(f"path must start with '/', e.g. '/StreamingQuery/', got {path!r}")
        return path
