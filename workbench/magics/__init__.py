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

__all__ = ["hook_kernel_shutdown", "load_ipython_extension", "unload_ipython_extension"]

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

    _close_streams_panel(_magics_of(ipython))
    magics = StreamMagics(shell=ipython)
    ipython.register_magics(magics)
    _open_streams_panel(ipython, magics)
    from ..views.console import filter_kernel_stderr

    filter_kernel_stderr()
    # A session the user built before loading gets the workbench's listener now, so that
    # every query started from here on is recorded from its first batch.
    try:
        from ..spark import current_env

        current_env().adopt_active()
    except Exception:
        log.debug("adopting the active session failed", exc_info=True)
    # A kernel shutdown or restart ends the interpreter: stop the streams (and their
    # pollers and monitors) on the way out, before Spark's own shutdown hooks run.
    atexit.unregister(_stop_at_exit)
    atexit.register(_stop_at_exit, magics)
    hook_kernel_shutdown(ipython)


def hook_kernel_shutdown(ipython: Any = None) -> None:
    """Stop streams and Spark when this Jupyter kernel is asked to shut down or restart.

    Neither IPython nor ipykernel offers a shutdown event, and exit hooks come too late:
    on a shutdown request ipykernel first signals its child processes (the Spark JVM, with
    the queries still running: their pollers see them fail) and waits for them, and Jupyter
    servers kill a kernel that has not exited within a few seconds. So the kernel's
    ``do_shutdown`` is wrapped: the magics' streams stop, then the session and its JVM, then
    the kernel carries on as before.

    Installed once per kernel, by ``%load_ext workbench`` and by the facade's first call
    (``workbench.session()`` and the others), so that a notebook that never loads the
    magics ends as cleanly. Does nothing outside a Jupyter kernel; ``ipython`` defaults to
    the running shell.

    Examples
    --------
    >>> hook_kernel_shutdown()    # outside a kernel: nothing to hook
    """
    if ipython is None:
        import sys

        if "IPython" not in sys.modules:  # no shell, so no kernel
            return
        from IPython import get_ipython

        ipython = get_ipython()
    kernel = getattr(ipython, "kernel", None)
    if kernel is None or getattr(kernel.do_shutdown, "_workbench_hook", False):
        return
    original = kernel.do_shutdown

    def do_shutdown(restart: bool) -> Any:
        from .._process_end import ending_process

        # The streams' monitors draw no final picture (the kernel ends before anyone sees
        # it), and one begun before the request ends before the interpreter does.
        with ending_process():
            try:
                magics = _magics_of(ipython)  # loaded now, whoever hooked the kernel
                if magics is not None:
                    magics.stop_everything(grace=0.0)
                from ..spark import current_env

                current_env().shutdown()
            except Exception:
                log.warning("stopping Spark at kernel shutdown failed", exc_info=True)
        return original(restart)

    do_shutdown._workbench_hook = True  # type: ignore[attr-defined]
    kernel.do_shutdown = do_shutdown


def _open_streams_panel(ipython: Any, magics: Any) -> None:
    """Serve JupyterLab's Streams panel over the ``workbench.streams`` comm."""
    from ..spark import current_env
    from ..views.streams_panel import register_streams_comm

    try:
        magics.streams_panel = register_streams_comm(current_env, kernel=getattr(ipython, "kernel", None))
    except Exception:  # the magics work without the panel
        log.warning("the Streams panel's comm could not be registered", exc_info=True)


def _close_streams_panel(magics: Any) -> None:
    publisher = getattr(magics, "streams_panel", None)
    if publisher is not None:
        magics.streams_panel = None
        publisher.close()


def unload_ipython_extension(ipython: Any) -> None:
    """Stop every stream and remove the magics (``%unload_ext workbench``)."""
    magics = _magics_of(ipython)
    atexit.unregister(_stop_at_exit)
    if magics is None:
        return
    _close_streams_panel(magics)
    try:
        magics.stop_everything()
    except Exception:
        log.debug("stopping streams at unload failed", exc_info=True)
    from ..views.console import unfilter_kernel_stderr

    unfilter_kernel_stderr()
    for kind in ("line", "cell"):
        ipython.magics_manager.magics[kind].pop("stream", None)
    ipython.magics_manager.registry.pop("StreamMagics", None)
    if magics in ipython.configurables:
        ipython.configurables.remove(magics)


def _stop_at_exit(magics: Any) -> None:
    from .._process_end import ending_process

    with ending_process():
        try:
            # At exit nothing waits for a batch to finish or a replay to report (Spark may be gone).
            magics.stop_everything(grace=0.0)
        except Exception:  # at exit Spark may already be gone; nothing is left to stop then
            log.debug("stopping streams at exit failed", exc_info=True)
