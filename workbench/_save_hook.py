"""Saving a notebook from pages without the workbench's JupyterLab extension keeps pictures, not dead widgets.

A workbench output (monitor, replay panel, ``compare``, console sink) holds the live widget
view and, once published, a picture and a text of it, marked by
:data:`~workbench.views.static_output.FALLBACK_METADATA`. Opened again after its kernel is
gone, JupyterLab's widget renderer picks the widget view of a trusted notebook and says
"Error displaying widget: model not found"; the workbench's extension makes it show the
picture instead, but a page without the extension cannot. So when this server's pages have
the extension disabled (``jupyter labextension disable spark-streaming-workbench``), a
registered pre-save hook (:func:`keep_pictures`) writes such outputs without their widget
view: the file then shows the picture (or text) everywhere. The page keeps its live widgets;
only the file changes. With the extension enabled the file keeps both.
"""

from __future__ import annotations

import logging
from typing import Any

from ._labext import LABEXTENSION_NAME
from .views.static_output import FALLBACK_METADATA, WIDGET_VIEW

__all__ = ["extension_disabled", "keep_pictures", "without_dead_views"]

log = logging.getLogger(__name__)

_MARKER = next(iter(FALLBACK_METADATA))


def extension_disabled() -> bool:
    """Whether this Jupyter's page config disables the workbench's JupyterLab extension."""
    # Where `jupyter labextension disable` writes (what jupyterlab_server reads for each page).
    from jupyter_server.services.config.manager import ConfigManager

    disabled = (ConfigManager(config_dir_name="labconfig").get("page_config") or {}).get("disabledExtensions") or {}
    if isinstance(disabled, dict):
        return bool(disabled.get(LABEXTENSION_NAME))
    return LABEXTENSION_NAME in disabled


def without_dead_views(notebook: dict[str, Any]) -> int:
    """Drop the widget view from every workbench output that has something else to show.

    Returns the number of outputs changed.

    Examples
    --------
    >>> output = {"output_type": "display_data", "metadata": dict(FALLBACK_METADATA),
    ...           "data": {WIDGET_VIEW: {"model_id": "1"}, "image/png": "iVBO", "text/plain": "a monitor"}}
    >>> without_dead_views({"cells": [{"cell_type": "code", "outputs": [output]}]})
    1
    >>> sorted(output["data"])
    ['image/png', 'text/plain']
    """
    changed = 0
    for cell in notebook.get("cells") or []:
        for output in cell.get("outputs") or []:
            data, metadata = output.get("data"), output.get("metadata") or {}
            marker = metadata.get(_MARKER) if isinstance(metadata, dict) else None
            if isinstance(data, dict) and isinstance(marker, dict) and marker.get("fallback") \
                    and WIDGET_VIEW in data and len(data) > 1:
                del data[WIDGET_VIEW]
                changed += 1
    return changed


def keep_pictures(model: dict[str, Any], path: str, **_: Any) -> None:
    """A contents manager's pre-save hook: :func:`without_dead_views` while the extension is disabled."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    if extension_disabled():
        changed = without_dead_views(model["content"])
        if changed:
            log.debug("%s: saved %d workbench outputs without their widget view", path, changed)
