"""IPython magics: ``%load_ext workbench`` registers ``%%stream`` and ``%stream``.

``parser`` (pure) turns the magic's input into command objects; ``magic`` runs them.
Loading the extension also makes sure every stream stops when the kernel shuts down or
restarts (the interpreter exits then, and an exit hook stops the streams before Spark
goes away); unloading it stops every stream at once.
"""

from __future__ import annotations

import atexit
import logging
from typing import Any

__all__ = ["load_ipython_extension", "unload_ipython_extension"]

log = logging.getLogger(__name__)


def _magics_of(ipython: Any) -> Any:
    return ipython.magics_manager.registry.get("StreamMagics")


def load_ipython_extension(ipython: Any) -> None:
    """Register :class:`~workbench.magics.magic.StreamMagics` on ``ipython``.

    Examples
    --------
    >>> %load_ext workbench          # doctest: +SKIP
    """
    from .magic import StreamMagics

    magics = StreamMagics(shell=ipython)
    ipython.register_magics(magics)
    # A kernel shutdown or restart ends the interpreter: stop the streams (and their
    # pollers and monitors) on the way out, before Spark's own shutdown hooks run.
    atexit.unregister(_stop_at_exit)
    atexit.register(_stop_at_exit, magics)
    _hook_kernel_shutdown(ipython, magics)


def _hook_kernel_shutdown(ipython: Any, magics: Any) -> None:
    """Stop streams and Spark when the kernel is asked to shut down or restart.

    Neither IPython nor ipykernel offers a shutdown event, and exit hooks come too late:
    on a shutdown request ipykernel first signals its child processes (the Spark JVM, with
    the queries still running) and waits for them, and Jupyter servers kill a kernel that
    has not exited within a few seconds. So the kernel's ``do_shutdown`` is wrapped: streams
    stop, then the session and its JVM, then the kernel carries on as before.
    """
    kernel = getattr(ipython, "kernel", None)
    if kernel is None or getattr(kernel.do_shutdown, "_workbench_hook", False):
        return
    original = kernel.do_shutdown

    def do_shutdown(restart: bool) -> Any:
        try:
            magics.stop_everything(grace=0.0)
            from ..spark import current_env

            current_env().shutdown()
        except Exception:
            log.warning("stopping Spark at kernel shutdown failed", exc_info=True)
        return original(restart)

    do_shutdown._workbench_hook = True  # type: ignore[attr-defined]
    do_shutdown._workbench_original = original  # type: ignore[attr-defined]
    kernel.do_shutdown = do_shutdown


def unload_ipython_extension(ipython: Any) -> None:
    """Stop every stream and remove the magics (``%unload_ext workbench``)."""
    magics = _magics_of(ipython)
    atexit.unregister(_stop_at_exit)
    if magics is None:
        return
    _stop_at_exit(magics)
    kernel = getattr(ipython, "kernel", None)
    original = getattr(getattr(kernel, "do_shutdown", None), "_workbench_original", None)
    if original is not None:
        kernel.do_shutdown = original
    for kind in ("line", "cell"):
        ipython.magics_manager.magics[kind].pop("stream", None)
    ipython.magics_manager.registry.pop("StreamMagics", None)
    if magics in ipython.configurables:
        ipython.configurables.remove(magics)


def _stop_at_exit(magics: Any) -> None:
    try:
        magics.stop_everything()
    except Exception:  # at exit Spark may already be gone; nothing is left to stop then
        log.debug("stopping streams at exit failed", exc_info=True)
