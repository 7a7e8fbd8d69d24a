"""The kernel side of JupyterLab's Streams panel: the ``workbench.streams`` comm.

``%load_ext workbench`` registers the comm target ``workbench.streams`` (and tells a page
that connected before the workbench was loaded to open its comm now: a comm message to the
comm id :data:`LOADED_COMM_ID`, which no page opened, so that front ends without the
workbench's extension drop it silently where a comm opened by the kernel would make them log
"Exception opening new comm"). A
:class:`StreamsPublisher` sends every open comm a snapshot of the kernel's streams
(:mod:`~workbench.views.streams_message` says what one holds), only when something changed and at most once per
``min_interval`` seconds (two a second by default) however fast batches run: progress
listeners and stream starts only wake its thread, which coalesces them. Snapshots are
built from each handle's progress history, status and error, never by calling Spark.
The page may ask ``{"kind": "stop", "name": ...}`` (the stream stops on a thread of its
own, so the kernel's message loop never waits for a batch to end) or
``{"kind": "refresh"}``, and says ``{"kind": "detail", "on": bool}`` when the panel is shown
or hidden: a page whose panel nobody sees gets a snapshot only when a stream starts, ends
or fails (what its status bar count needs), not one per batch, and a fresh one as soon as
the panel shows again. The protocol is written down in ``docs/architecture.md``.

This module never imports Spark: the workbench state is given as a callable returning an
object with ``handles()``, ``get(name)``, ``on_stream_started`` and ``ui_web_url()``.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Any, Callable, Protocol

from ..errors import error_line
from ..options import check_seconds
from .sparkui import ui_port
from .streams_message import (
    BATCH_KEYS, COMM_TARGET, GAP_POINTS, LOADED_COMM_ID, StreamLike, current_cell_id, gap_seconds, outline,
    stream_info, streams_message,
)

__all__ = [
    "COMM_TARGET", "LOADED_COMM_ID", "GAP_POINTS", "BATCH_KEYS", "StreamsPublisher", "outline", "announce_loaded",
    "current_cell_id", "gap_seconds", "stream_info", "streams_message", "register_streams_comm", "StreamLike", "EnvLike",
]

log = logging.getLogger(__name__)

#: Seconds between checks for changes nobody announced (a stream started before the
#: workbench was loaded, a query that failed between polls).
HEARTBEAT = 2.0
#: Seconds between two readings of the Spark UI's port: Spark may start, stop (the UI
#: goes with it) or start again on another port while the panel watches.
UI_RETRY = 5.0


class EnvLike(Protocol):
    """What the publisher needs of the workbench state (a ``Workbench``)."""

    on_stream_started: list[Callable[[Any], None]]

    def handles(self) -> list[Any]: ...

    def get(self, name: str) -> Any: ...

    def ui_web_url(self) -> str | None: ...


class _Reader:
    """One open comm: what it was last sent, and whether its page shows the panel."""

    __slots__ = ("comm", "page", "detail", "last", "last_outline", "force")

    def __init__(self, comm: Any, page: str | None) -> None:
        self.comm, self.page = comm, page
        self.detail = True  # a page that never says (an older extension) gets every snapshot
        self.last: dict[str, Any] | None = None
        self.last_outline: dict[str, Any] | None = None  # outline(last), made once per snapshot sent
        self.force = True  # a new comm gets a snapshot at once

    def wants(self, message: dict[str, Any], message_outline: dict[str, Any] | None) -> bool:
        """Whether ``message`` (whose outline is ``message_outline``) is news to this page."""
        if self.force or self.last is None:
            return True
        return message != self.last if self.detail else message_outline != self.last_outline

    def took(self, message: dict[str, Any], message_outline: dict[str, Any] | None) -> None:
        self.force, self.last, self.last_outline = False, message, message_outline


class StreamsPublisher:
    """Sends the kernel's streams to every open ``workbench.streams`` comm, throttled.

    Parameters
    ----------
    env : callable
        Returns the current workbench state (see :class:`EnvLike`); called on each
        snapshot, so a replaced workbench (``new_env()``) is followed.
    min_interval : float, default 0.5
        Least seconds between two snapshots: at most ``1 / min_interval`` messages a second.
        A comm whose page said ``{"kind": "detail", "on": false}`` (its panel is hidden) is
        sent a snapshot only when :func:`outline` changes.
    clock : callable, default time.monotonic
    cell_id : callable, default current_cell_id
        Called when a stream starts (on the starting thread) to learn its cell.
    thread : bool, default True
        Send from a daemon thread of its own, started with the first comm; False leaves
        the sending to whoever calls :meth:`pump` (tests).

    Examples
    --------
    >>> from workbench.spark import current_env          # doctest: +SKIP
    >>> publisher = StreamsPublisher(current_env)          # doctest: +SKIP
    >>> publisher.attach(comm)                             # doctest: +SKIP
    >>> publisher.close()                                  # doctest: +SKIP
    """

    def __init__(
        self,
        env: Callable[[], EnvLike],
        *,
        min_interval: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
        cell_id: Callable[[], str | None] = current_cell_id,
        thread: bool = True,
    ) -> None:
        self._env_provider = env
        self.min_interval = check_seconds("min_interval", min_interval)
        self._clock = clock
        self._cell_id = cell_id
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._comms: list[_Reader] = []
        self._env: Any = None
        self._watched: weakref.WeakKeyDictionary[Any, tuple[str, str]] = weakref.WeakKeyDictionary()
        # One per stream run it follows, until the run ends: an unsubscribe function keeps its
        # history (and what that history feeds) alive. Under a lock of its own, held for nothing
        # else: a run's end is reported on its stopping thread while whoever replaces it holds
        # the registry's lock, which a snapshot (under the watch lock) waits for.
        self._unsubscribe: dict[tuple[str, str], Callable[[], None]] = {}
        self._unsubscribe_lock = threading.Lock()
        self._cells: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._last_time = float("-inf")
        self._port = 0
        self._port_checked = float("-inf")
        self._thread: threading.Thread | None = None
        self._watch_lock = threading.RLock()  # stream starts and snapshots come on many threads
        self._target_manager: Any = None
        self._use_thread = thread
        #: Snapshots sent so far (all comms count once per snapshot).
        self.sent = 0

    # -- comms -----------------------------------------------------------------------------------

    def attach(self, comm: Any, page: str | None = None) -> None:
        """Serve ``comm`` (opened by the page, or by the kernel): snapshots out, commands in.

        ``page`` names the page model that opened it (the open message's ``"page"``): a page
        that lost its connection opens a new comm without closing the old one, which is
        dropped here (:meth:`_forget`), so that each page has one reader.
        """
        if self._closed.is_set():
            comm.close()
            return
        self._current_env()  # watch stream starts from now on
        comm.on_msg(lambda msg: self.handle_message(msg.get("content", {}).get("data") or {}, comm))
        comm.on_close(lambda _msg: self._detach(comm))
        page = page if isinstance(page, str) and page else None
        with self._lock:
            replaced = [reader.comm for reader in self._comms if page is not None and reader.page == page]
            self._comms = [reader for reader in self._comms if page is None or reader.page != page]
            self._comms.append(_Reader(comm, page))
            if self._use_thread and self._thread is None:
                self._thread = threading.Thread(target=self._run, name="workbench-streams-panel", daemon=True)
                self._thread.start()
        for old in replaced:
            self._forget(old)
        self._wake.set()

    def _forget(self, comm: Any) -> None:
        """Drop ``comm``, whose page forgot it, from the kernel's comm manager, telling no page.

        Closing it would send ``comm_close`` on IOPub, which reaches every page connected to
        the kernel: each page that never had the comm logs "Comm not found for comm id".
        """
        try:
            comm._closed = True  # nothing to send when it is closed or collected later
        except AttributeError:
            pass
        manager = self._target_manager
        if manager is not None:
            try:
                manager.unregister_comm(comm)
            except (KeyError, AttributeError):  # not (or no longer) registered
                log.debug("the replaced Streams panel comm was not registered", exc_info=True)

    def _detach(self, comm: Any) -> None:
        with self._lock:
            self._comms = [reader for reader in self._comms if reader.comm is not comm]

    def _readers(self, comm: Any = None) -> list[_Reader]:
        """The open comms' readers (only ``comm``'s when given; all when it is None)."""
        with self._lock:
            return [reader for reader in self._comms if comm is None or reader.comm is comm]

    @property
    def comms(self) -> int:
        """How many comms are open."""
        with self._lock:
            return len(self._comms)

    def handle_message(self, data: dict[str, Any], comm: Any = None) -> None:
        """Act on a page-to-kernel message (``stop``, ``refresh``, ``detail``); unknown kinds are ignored.

        ``refresh`` and ``detail`` apply to ``comm``'s page (every comm's when it is None).
        """
        kind, on = data.get("kind"), data.get("on")
        if kind == "refresh" or (kind == "detail" and isinstance(on, bool)):
            readers = self._readers(comm)
            with self._lock:
                for reader in readers:
                    # A refresh, or a panel shown again, gets the newest state at once.
                    reader.force = reader.force or kind == "refresh" or (on is True and not reader.detail)
                    if kind == "detail":
                        reader.detail = on
            self._wake.set()
        elif kind == "stop":
            name = data.get("name")
            try:
                handle = self._current_env().get(str(name))
            except ValueError as error:
                if comm is not None:
                    comm.send({"kind": "error", "name": str(name), "message": f"cannot stop {name!r}: {error_line(error)}"})
                return
            def stop() -> None:
                try:
                    handle.stop()
                except Exception as error:  # Spark could not stop it: it still runs
                    log.debug("stopping %s from the Streams panel failed", name, exc_info=True)
                    if comm is not None:
                        comm.send({"kind": "error", "name": str(name),
                                   "message": f"cannot stop {name!r}: {error_line(error)}"})

            # handle.stop() waits for the running batch to end: never on the kernel's thread.
            threading.Thread(target=stop, name=f"workbench-stop-{name}", daemon=True).start()

    # -- watching streams ----------------------------------------------------------------------

    def _current_env(self) -> EnvLike:
        env = self._env_provider()
        if env is not self._env:
            self._follow(env)
        return env

    def _follow(self, env: EnvLike) -> None:
        """Watch ``env`` (its stream starts) instead of the previous workbench state."""
        old, self._env = self._env, env
        if old is not None and self._on_started in old.on_stream_started:
            old.on_stream_started.remove(self._on_started)
        env.on_stream_started.append(self._on_started)

    def _on_started(self, handle: Any) -> None:
        # On the starting thread: the cell that runs now is the one that started the stream.
        cell = self._cell_id()
        if cell:
            self._cells[handle] = cell
        self._watch(handle)
        self._wake.set()

    def _watch(self, handle: Any) -> tuple[str, str]:
        with self._watch_lock:
            ids = self._watched.get(handle)
            if ids is not None:
                return ids
            ids = (handle.id, handle.run_id)  # constant per run: read once
            self._watched[handle] = ids
            unsubscribe = handle.progress.subscribe(lambda _records: self._wake.set())
            with self._unsubscribe_lock:
                self._unsubscribe[ids] = unsubscribe

        def finished(_handle: Any) -> None:
            with self._unsubscribe_lock:  # never the watch lock here (see __init__)
                unsubscribe = self._unsubscribe.pop(ids, None)
            if unsubscribe is not None:
                unsubscribe()
            self._wake.set()

        handle.on_finished(finished)
        return ids

    def _spark_ui_port(self, env: EnvLike) -> int:
        now = self._clock()
        if now - self._port_checked >= UI_RETRY:
            self._port_checked = now
            self._port = ui_port(env.ui_web_url())
        return self._port

    def snapshot(self) -> dict[str, Any]:
        """The ``streams`` message for the current state."""
        with self._watch_lock:
            env = self._current_env()
        # Queries started with a plain writeStream...start() are listed too (as %stream list lists
        # them). Outside the watch lock: watching calls Spark and takes the registry's lock, which
        # a stream's start holds while it tells _on_started.
        watch_started = getattr(env, "watch_started", None)
        if watch_started is not None:
            try:
                watch_started()
            except Exception:  # the session ended meanwhile: the next snapshot looks again
                log.debug("watching the session's new queries failed", exc_info=True)
        with self._watch_lock:
            port = self._spark_ui_port(env)
            streams = [
                stream_info(handle, ids=self._watch(handle), port=port, cell_id=self._cells.get(handle))
                for handle in env.handles()
            ]
        return streams_message(streams, port)

    # -- sending ---------------------------------------------------------------------------------

    def pump(self) -> float | None:
        """Send a snapshot if one is due; the seconds until the next pump is worth doing.

        None means "nothing to do until woken" (no comm open). Runs on the publisher's
        thread; tests call it directly with an injected clock.
        """
        readers = self._readers()
        if not readers:
            return None
        wait = self._last_time + self.min_interval - self._clock()
        if wait > 0:
            return wait
        message = self.snapshot()
        brief = outline(message)  # once per snapshot, for the pages whose panel is hidden
        with self._lock:
            due = [reader for reader in readers if reader.wants(message, brief)]
            for reader in due:
                reader.took(message, brief)
        if due:
            self._last_time = self._clock()
            self.sent += 1
        for reader in due:
            try:
                reader.comm.send(message)
            except Exception:  # a comm whose kernel side is gone: forget it
                log.debug("sending to the Streams panel failed", exc_info=True)
                self._detach(reader.comm)
        return HEARTBEAT

    def _run(self) -> None:
        failing = False
        while not self._closed.is_set():
            self._wake.clear()
            try:
                delay = self.pump()
                failing = False
            except Exception:  # one bad snapshot must not end the panel's news for the session
                if not failing:  # once until a snapshot works again, not at every batch
                    log.exception("the Streams panel publisher failed; trying again")
                failing, delay = True, HEARTBEAT
            if self._closed.is_set():
                break
            if failing or (delay is not None and delay < HEARTBEAT):
                self._closed.wait(delay)  # throttled: wake-ups cannot shorten this
            else:
                self._wake.wait(delay)

    def close(self) -> None:
        """Close every comm, stop watching streams, unregister the comm target, end the thread."""
        self._closed.set()
        self._wake.set()
        with self._lock:
            comms, self._comms = [reader.comm for reader in self._comms], []
            thread, self._thread = self._thread, None
        for comm in comms:
            try:
                comm.close()
            except Exception:
                log.debug("closing a Streams panel comm failed", exc_info=True)
        with self._watch_lock:
            with self._unsubscribe_lock:
                following, self._unsubscribe = list(self._unsubscribe.values()), {}
            for unsubscribe in following:
                unsubscribe()
            if self._env is not None and self._on_started in self._env.on_stream_started:
                self._env.on_stream_started.remove(self._on_started)
        manager, self._target_manager = self._target_manager, None
        if manager is not None:
            manager.unregister_target(COMM_TARGET, None)
        if thread is not None and thread is not threading.current_thread():
            thread.join(5)


def _page(open_msg: dict[str, Any]) -> Any:
    """The page model named in a comm's open message (None from an older extension)."""
    return (open_msg.get("content", {}).get("data") or {}).get("page")


def register_streams_comm(env: Callable[[], EnvLike], *, kernel: Any = None) -> StreamsPublisher:
    """Register the ``workbench.streams`` comm target; returns the publisher serving it.

    Parameters
    ----------
    env : callable
        Returns the current workbench state.
    kernel : ipykernel.kernelbase.Kernel, optional
        The Jupyter kernel (None in a plain IPython shell): a page that connected before the
        workbench was loaded learns of it through a message on the kernel's IOPub channel
        (:func:`announce_loaded`), and opens its comm then.

    Examples
    --------
    >>> publisher = register_streams_comm(current_env, kernel=get_ipython().kernel)   # doctest: +SKIP
    >>> publisher.close()            # closes its comms and unregisters the target  # doctest: +SKIP
    """
    import comm as comm_package

    publisher = StreamsPublisher(env)
    manager = comm_package.get_comm_manager()
    manager.register_target(COMM_TARGET, lambda comm, msg: publisher.attach(comm, _page(msg)))
    publisher._target_manager = manager
    # Watch stream starts from now on, so that the cell of each new stream is known.
    publisher.snapshot()
    if kernel is not None:
        announce_loaded(kernel)
    return publisher


def announce_loaded(kernel: Any) -> None:
    """Tell the pages connected to ``kernel`` that the ``workbench.streams`` target exists.

    A ``comm_msg`` to the comm id :data:`LOADED_COMM_ID`, which no page opened: the
    workbench's JupyterLab extension answers by opening its comm; other front ends drop it.

    Examples
    --------
    >>> announce_loaded(get_ipython().kernel)   # doctest: +SKIP
    """
    content = {"comm_id": LOADED_COMM_ID, "data": {"kind": "loaded"}}
    kernel.session.send(kernel.iopub_socket, "comm_msg", content, parent=kernel.get_parent(),
                        ident=f"comm-{LOADED_COMM_ID}".encode("ascii"))
