"""Ready-made replay experiments: a source, the query to run on it, and what to look for.

Each function returns a :class:`Scenario`; ``workbench.replay_panel(**scenario.panel_args())``
or ``%%stream NAME --replay guide_word_count`` plays it.

Examples
--------
>>> s = guide_word_count()
>>> len(s.source.batches), s.output_mode, s.query.describe()
(4, 'append', "withWatermark('event_time', '10 minutes').groupBy(window('event_time', '10 minutes', '5 minutes'), 'word').count()")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .columns import Disorder, KeyColumn, PayloadColumn
from .spec import Replay, Script, WindowCount

__all__ = ["Scenario", "guide_word_count", "late_clicks", "SCENARIOS", "get"]

GUIDE_NOTES = """\
The Structured Streaming programming guide's watermark example: word counts in 10-minute
windows sliding every 5 minutes, watermark 10 minutes, one trigger per batch of events.

What Spark 4.3 really does (checked by the workbench's tests against Spark's output):
* Watermarks reported per batch (eventTime.watermark, the one a batch uses to evict
  state): batch 0: 1970-01-01 (none yet), batch 1: 11:58 (12:08 owl - 10 min), batch 2:
  12:04 (12:14 dog), batch 3: 12:11 (12:21 owl). The guide's figure shows the same values.
* (12:04, donkey) arrives in batch 3 and is NOT ignored, unlike the guide's text. Late
  rows are filtered against the watermark the *previous* batch reported (12:04, not
  batch 3's 12:11), and for a windowed aggregation Spark compares each window's END
  with it. Both donkey windows (11:55-12:05 and 12:00-12:10) end after 12:04, so the
  donkey is counted in both; in append mode both windows are emitted in batch 3 itself
  (eviction uses 12:11), 12:00-12:10 with donkey = 1.
* A row at 11:50 in the same batch is dropped (both its windows end by 12:04) and a row
  at 11:58 is partly dropped: window 11:50-12:00 loses it, 11:55-12:05 counts it. Spark's
  numRowsDroppedByWatermark counts one per dropped window group, not rows.
"""


@dataclass(frozen=True)
class Scenario:
    """A replay experiment: ``source`` (Replay or Script), ``query`` and notes.

    Examples
    --------
    >>> guide_word_count().name
    'guide_word_count'
    """

    name: str
    source: Replay | Script
    query: WindowCount
    output_mode: str = "append"
    notes: str = ""

    def panel_args(self) -> dict[str, Any]:
        """Keyword arguments for ``workbench.replay_panel``."""
        return {"source": self.source, "query": self.query, "name": self.name, "output_mode": self.output_mode}


GUIDE_BATCHES = [
    [("12:07", "dog"), ("12:08", "owl")],
    [("12:14", "dog"), ("12:09", "cat")],
    [("12:15", "cat"), ("12:08", "dog"), ("12:13", "owl"), ("12:21", "owl")],
    [("12:17", "owl"), ("12:04", "donkey")],
]


def guide_word_count(*, watermark: str = "10 minutes", extra_last_batch: tuple[tuple[str, str], ...] = (),
                     output_mode: str = "append") -> Scenario:
    """The programming guide's late-data example (see :data:`GUIDE_NOTES`).

    Parameters
    ----------
    watermark : str, default "10 minutes"
        The watermark delay (compare "10 minutes" with "20 minutes").
    extra_last_batch : tuple of (time, word), optional
        Rows added to the donkey's batch, e.g. ``(("11:50", "eel"),)`` to see a drop.
    output_mode : str, default "append"

    Examples
    --------
    >>> guide_word_count(extra_last_batch=(("11:50", "eel"),)).source.batches[3][-1][1]
    'eel'
    """
    batches = [list(b) for b in GUIDE_BATCHES]
    batches[3] += list(extra_last_batch)
    return Scenario(
        name="guide_word_count",
        source=Script(batches, ["event_time", "word"], day="2024-01-01", notes=GUIDE_NOTES),
        query=WindowCount("event_time", "10 minutes", "5 minutes", watermark, ("word",)),
        output_mode=output_mode,
        notes=GUIDE_NOTES,
    )


def late_clicks(*, watermark: str = "2 minutes", seed: int = 1) -> Scenario:
    """Clicks per page in 5-minute windows, one batch a minute, 20% of rows 1-6 minutes late.

    Examples
    --------
    >>> late_clicks().source.disorder.share
    0.2
    """
    return Scenario(
        name="late_clicks",
        source=Replay(
            rows_per_batch=20, start="2024-01-01 12:00", advance="1 minute", seed=seed,
            keys=(KeyColumn("page", cardinality=5, skew=1.0),),
            disorder=Disorder(share=0.2, min_delay="1 minute", max_delay="6 minutes"),
            payload=(PayloadColumn("ms_on_page", "int", low=100, high=5000),),
        ),
        query=WindowCount("event_time", "5 minutes", None, watermark, ("page",)),
        output_mode="append",
        notes="Generated clicks with late arrivals: compare watermark delays for dropped rows vs state.",
    )


#: Scenario builders by name (``%%stream NAME --replay <name>``).
SCENARIOS = {"guide_word_count": guide_word_count, "late_clicks": late_clicks}


def get(name: str) -> Scenario:
    """The scenario called ``name``.

    Examples
    --------
    >>> get("guide").name
    Traceback (most recent call last):
    ...
    ValueError: unknown scenario 'guide': use one of guide_word_count, late_clicks
    """
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}: use one of {', '.join(SCENARIOS)}")
    return SCENARIOS[name]()
