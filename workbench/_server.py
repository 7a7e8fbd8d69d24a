"""A Jupyter server extension that says whether a Spark UI answers, before the page shows it.

JupyterLab's Spark UI tab shows the Spark UI through jupyter-server-proxy's
``/proxy/<port>/`` route. When nothing listens there the proxy answers with an HTTP error,
which the browser reports in its console whoever asked; so the tab first asks
``GET /workbench/spark-ui/<port>`` (optionally ``?path=<page>``; the UI's root by default) (behind the server's token, like every API),
which always answers 200 with ``{"port", "answers", "status", "reason"}``: whether the page
answers on 127.0.0.1, the HTTP status it gave (None when nothing answered) and why not.
Enabled by ``etc/jupyter/jupyter_server_config.d/spark-streaming-workbench.json``, which
the package installs. It also registers the pre-save hook of :mod:`workbench._save_hook`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_spark_ui"]

#: Seconds to wait for the Spark UI to answer.
TIMEOUT = 10.0


async def check_spark_ui(port: int, path: str, *, host: str = "127.0.0.1", timeout: float = TIMEOUT) -> dict[str, Any]:
    """Whether a Spark UI page answers at ``http://<host>:<port><path>``.

    Returns
    -------
    dict
        ``{"port": int, "answers": bool, "status": int | None, "reason": str}``; a redirect
        counts as an answer (the Spark UI redirects ``/`` to ``/jobs/``).
    """
    from tornado.httpclient import AsyncHTTPClient, HTTPClientError

    if not 0 < port < 65536:
        return {"port": port, "answers": False, "status": None, "reason": "no Spark UI port"}
    if not path.startswith("/"):
        path = "/" + path
    client = AsyncHTTPClient()
    try:
        response = await client.fetch(f"http://{host}:{port}{path}", method="GET", follow_redirects=False,
                                      raise_error=False, request_timeout=timeout, connect_timeout=timeout)
    except (OSError, HTTPClientError) as error:
        return {"port": port, "answers": False, "status": None, "reason": str(error) or type(error).__name__}
    if response.code == 599:  # tornado's code for "no HTTP answer" (refused, timed out)
        reason = str(response.error) if response.error else "no answer"
        return {"port": port, "answers": False, "status": None, "reason": reason}
    return {"port": port, "answers": response.code < 400, "status": response.code, "reason": response.reason or ""}


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "workbench._server"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    from jupyter_server.base.handlers import APIHandler
    from jupyter_server.utils import url_path_join
    from tornado import web

    class SparkUIStatusHandler(APIHandler):
        @web.authenticated
        async def get(self, port: str) -> None:
            path = self.get_query_argument("path", "/")
            self.finish(await check_spark_ui(int(port), path))

    base = server_app.web_app.settings["base_url"]
    server_app.web_app.add_handlers(".*$", [(url_path_join(base, r"workbench/spark-ui/(\d{1,5})"), SparkUIStatusHandler)])
    # Pages without the extension cannot show a saved output's picture in place of a dead widget.
    from ._save_hook import keep_pictures

    server_app.contents_manager.register_pre_save_hook(keep_pictures)
