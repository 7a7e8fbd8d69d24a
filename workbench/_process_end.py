"""The process is ending: from then on no output draws or publishes a picture.

Set by whatever ends the process first: the kernel's shutdown hook (installed by ``%load_ext
workbench`` and by the facade's first call in a kernel), the magics' exit hook, or the spark
layer's own exit hook (a plain Python process). A stream stopped on the way out would
otherwise draw its final picture on its monitor's thread while the interpreter finalises,
and matplotlib dies mid-draw inside FreeType, which aborts the process (``terminate called
without an active exception``, SIGABRT). Nobody would see that picture anyway.

Plain Python, no imports of the package: every layer may use it.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

__all__ = ["PICTURE_WAIT", "draw_counted", "ending_process", "is_ending", "process_ending", "wait_for_pictures"]

T = TypeVar("T")

#: Set once the process is ending.
_ending = threading.Event()
#: Pictures being drawn now, and the condition their ends notify.
_drawing = 0
_drawing_changed = threading.Condition()
#: Seconds an ending process waits for a picture begun before (:func:`ending_process`): a
#: kernel's whole shutdown must fit the 2.5 s before Jupyter terminates it.
PICTURE_WAIT = 0.5


def process_ending() -> None:
    """Say that the process is ending: from now on no output draws or publishes a picture.

    For the rest of the process; the exit hooks call it through :func:`ending_process`.

    Examples
    --------
    >>> process_ending()  # doctest: +SKIP
    """
    _ending.set()


def is_ending() -> bool:
    """Whether :func:`process_ending` was called.

    >>> is_ending()
    False
    """
    return _ending.is_set()


def wait_for_pictures(timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for pictures being drawn to be done; True when none is.

    Examples
    --------
    >>> wait_for_pictures(0.0)
    True
    """
    with _drawing_changed:
        return _drawing_changed.wait_for(lambda: _drawing == 0, timeout=timeout)


@contextmanager
def ending_process(wait: float = PICTURE_WAIT) -> Iterator[None]:
    """The process is ending: no picture is drawn from here on (:func:`process_ending`), and
    after the body (which stops the streams) up to ``wait`` seconds go to a picture begun before.

    Examples
    --------
    >>> with ending_process():       # doctest: +SKIP
    ...     workbench.stop_all()
    """
    process_ending()
    try:
        yield
    finally:
        wait_for_pictures(wait)


def draw_counted(picture: Callable[[], T]) -> T:
    """Run ``picture()`` counted as a picture being drawn (what :func:`wait_for_pictures` waits for).

    >>> draw_counted(lambda: b"png")
    b'png'
    """
    global _drawing
    with _drawing_changed:
        _drawing += 1
    try:
        return picture()
    finally:
        with _drawing_changed:
            _drawing -= 1
            _drawing_changed.notify_all()
