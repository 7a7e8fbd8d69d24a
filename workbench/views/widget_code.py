"""The JavaScript of the workbench's widgets, as shipped inside the Python package.

The chart grid and the "Spark UI" button are `anywidget <https://anywidget.dev>`_ widgets,
so they render in every front end that renders widgets (JupyterLab, Notebook 7, VS Code,
Colab), with or without the workbench's JupyterLab extension. Their ``_esm`` is a small
loader (1 KB or less, built from ``extensions/src/anywidget/`` into ``workbench/views/static/``
at install time; a wheel carries the build, so users need no Node):

* in a page that has the workbench's JupyterLab extension, the loader draws with the
  extension's code and plotly.js comes from the extension's static files, once per page;
* elsewhere the first chart grid of a page asks its kernel once (``{"kind": "code"}``); the
  kernel answers with :func:`code_buffers`: the widgets' module and plotly.js
  (plotly.py's own ``plotly.min.js``, gzip-compressed), as two binary buffers, which every
  widget of that page then shares. plotly.js is never part of a widget's ``_esm``, and never
  comes from a CDN.
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

from .._labext import REBUILD_HINT

__all__ = ["STATIC", "esm", "code_buffers"]

#: Where the build puts the widgets' ES modules (``npm run build`` in ``extensions/``).
STATIC = Path(__file__).resolve().parent / "static"



def esm(name: str) -> str:
    """The built ES module ``name`` (e.g. ``"chartgrid.js"``), or one that says it is missing.

    A source checkout that was never built still imports: its widgets then show one line
    saying how to build them instead of failing.

    Examples
    --------
    >>> "export" in esm("chartgrid.js")
    True
    """
    path = STATIC / name
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        message = f"The workbench's widget code {path} was not built: {REBUILD_HINT}."
        return "export default {render({el}) {el.textContent = %r;}};\n" % message


@functools.lru_cache(maxsize=1)
def code_buffers() -> tuple[bytes, bytes]:
    """What the kernel sends a page without the extension: (widgets module, gzipped plotly.js).

    Read and compressed once per kernel (about 0.3 s; 4.8 MB of plotly.js become about
    1.4 MB).

    Examples
    --------
    >>> module, plotly_gz = code_buffers()
    >>> b"makeWidgets" in module, plotly_gz[:2] == b"\\x1f\\x8b"
    (True, True)
    """
    import plotly

    module = (STATIC / "widgets.js").read_bytes()
    plotly_js = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes()
    return module, gzip.compress(plotly_js, compresslevel=6, mtime=0)
