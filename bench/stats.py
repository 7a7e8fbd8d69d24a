"""What the benchmarks compute alike: one 95th percentile, and the order of their arms in each round."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")


def p95(values: Iterable[float]) -> float:
    """The 95th percentile of ``values`` by nearest rank.

    The smallest value that at least 95 % of the values do not exceed: of 20 values the 19th
    smallest, of 10 the largest. The rank is computed in integers, so no rounding moves it.

    Parameters
    ----------
    values : iterable of float
        At least one value, in any order.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        When ``values`` is empty.

    Examples
    --------
    >>> p95(range(1, 21))
    19
    >>> p95([5.0, 1.0, 3.0])
    5.0
    """
    ordered = sorted(values)
    if not ordered:
        raise ValueError("p95 of no values")
    return ordered[-(-95 * len(ordered) // 100) - 1]


def rotated(arms: Sequence[T], round_index: int) -> list[T]:
    """``arms`` in the order of round ``round_index``: each round starts one arm further on.

    So that no arm always runs first in a round, when a fresh JVM, a cold page or a cold
    cache would be charged to it alone.

    Parameters
    ----------
    arms : sequence
        The arms in their first round's order.
    round_index : int
        The round, from 0.

    Returns
    -------
    list

    Examples
    --------
    >>> rotated(["a", "b", "c"], 0), rotated(["a", "b", "c"], 1), rotated(["a", "b", "c"], 4)
    (['a', 'b', 'c'], ['b', 'c', 'a'], ['b', 'c', 'a'])
    """
    ordered = list(arms)
    if not ordered:
        return ordered
    shift = round_index % len(ordered)
    return ordered[shift:] + ordered[:shift]
