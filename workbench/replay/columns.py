"""The generated columns of a :class:`~workbench.replay.Replay`: keys, disorder and payload.

Each is a frozen dataclass whose values are checked when it is built; ``Replay`` holds
them and ``workbench.spark.replay_source`` turns them into Spark expressions. Pure Python.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any

from .values import check_ident, check_int, check_number, parse_duration

__all__ = ["KeyColumn", "Disorder", "PayloadColumn", "DISTRIBUTIONS", "PAYLOAD_KINDS"]

#: How late rows' delays are spread between ``min_delay`` and ``max_delay``.
DISTRIBUTIONS: tuple[str, ...] = ("uniform", "fixed", "exponential")
#: Kinds of generated payload column.
PAYLOAD_KINDS: tuple[str, ...] = ("int", "float", "choice")


@dataclass(frozen=True)
class KeyColumn:
    """A generated key column: ``cardinality`` distinct values ``prefix0 .. prefixN-1``.

    ``skew`` 0 spreads rows evenly; larger values put more rows on the low keys (a key's
    index is ``floor(cardinality * u ** (1 + skew))`` for a uniform ``u``).

    Examples
    --------
    >>> KeyColumn("user", cardinality=3, skew=2.0).prefix
    'user_'
    """

    name: str = "key"
    cardinality: int = 10
    skew: float = 0.0
    prefix: str | None = None

    def __post_init__(self) -> None:
        check_ident("key column", self.name)
        check_int(f"cardinality of key {self.name!r}", self.cardinality, 1)
        check_number(f"skew of key {self.name!r}", self.skew, 0.0, 100.0)
        if self.prefix is None:
            object.__setattr__(self, "prefix", f"{self.name}_")
        elif not isinstance(self.prefix, str):
            raise ValueError(f"prefix of key {self.name!r} must be text, got {self.prefix!r}")


@dataclass(frozen=True)
class Disorder:
    """Event-time disorder: a ``share`` of rows arrive late by ``min_delay .. max_delay``.

    On-time rows get event times spread over their batch's interval (``jitter``); late
    rows get their batch's time minus a delay drawn from ``distribution``
    (``uniform``, ``fixed`` = always ``max_delay``, or ``exponential`` with mean
    ``(max_delay - min_delay) / 3`` above ``min_delay``, capped at ``max_delay``).

    Examples
    --------
    >>> Disorder(share=0.2, min_delay="1 minute", max_delay="12 minutes").max_delay
    datetime.timedelta(seconds=720)
    >>> Disorder(distribution="normalish")
    Traceback (most recent call last):
    ...
    ValueError: unknown distribution 'normalish': use one of uniform, fixed, exponential
    """

    share: float = 0.1
    min_delay: Any = "1 minute"
    max_delay: Any = "5 minutes"
    distribution: str = "uniform"
    jitter: bool = True

    def __post_init__(self) -> None:
        check_number("late share", self.share, 0.0, 1.0)
        low = parse_duration(self.min_delay, "min_delay")
        high = parse_duration(self.max_delay, "max_delay")
        if high < low:
            raise ValueError(f"max_delay ({self.max_delay!r}) must not be below min_delay ({self.min_delay!r})")
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"unknown distribution {self.distribution!r}: use one of {', '.join(DISTRIBUTIONS)}")
        object.__setattr__(self, "min_delay", low)
        object.__setattr__(self, "max_delay", high)
        object.__setattr__(self, "jitter", bool(self.jitter))


@dataclass(frozen=True)
class PayloadColumn:
    """A generated payload column: ``int`` or ``float`` in ``[low, high)``, or a ``choice``.

    Examples
    --------
    >>> PayloadColumn("amount", "float", low=0, high=100).kind
    'float'
    >>> PayloadColumn("colour", "choice", choices=("red", "blue")).choices
    ('red', 'blue')
    """

    name: str
    kind: str = "int"
    low: float = 0
    high: float = 100
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_ident("payload column", self.name)
        if self.kind not in PAYLOAD_KINDS:
            raise ValueError(f"unknown payload kind {self.kind!r} for {self.name!r}: use one of {', '.join(PAYLOAD_KINDS)}")
        object.__setattr__(self, "choices", tuple(self.choices))
        if self.kind == "choice":
            if not self.choices or not all(isinstance(c, str) for c in self.choices):
                raise ValueError(f"payload {self.name!r} of kind 'choice' needs choices=(text, ...)")
        else:
            for bound in (self.low, self.high):
                if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not math.isfinite(bound):
                    raise ValueError(f"payload {self.name!r} bounds must be finite numbers, got {bound!r}")
                if self.kind == "int" and abs(bound) > 2**53:  # drawn with doubles, which hold whole numbers to 2**53
                    raise ValueError(f"payload {self.name!r} of kind 'int' needs bounds from -2**53 to 2**53, "
                                     f"got {bound!r}")
            if not self.low < self.high:
                raise ValueError(f"payload {self.name!r} needs low < high, got {self.low!r} .. {self.high!r}")
