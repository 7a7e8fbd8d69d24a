"""What a playing replay panel's pictures cost the kernel while the user runs other cells.

Run from the repository root::

    .venv/bin/python bench/bench_panel_pictures.py [--seconds 20] [--rounds 3]

A replay panel shown in a real IPython shell (its display messages recorded, as a kernel
would send them) plays one batch a second (``workbench.scenarios.guide_word_count()``),
while a trivial cell runs every half second, as when a user goes on working below it.
After a cell that finds the run moved, the panel publishes a picture of its charts (for a
saved notebook and front ends without widgets). Two arms, alternating in rounds:

- **as is**: while the panel plays, a picture at most every
  ``workbench.views.replay_panel.PLAYING_PICTURE_EVERY_S`` seconds;
- **every cell**: a picture after every cell that found a newer batch (as before).

Per arm and round: the kernel process's CPU per cell (Python, all its threads: the
pictures are drawn on the kernel's main thread, after the cell) and the pictures
published per minute. The page side of a picture (a new view of the panel where the
workbench's extension is missing) is ``bench_browser.py``'s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def one_phase(shell, seconds: float) -> dict[str, float]:
    """Cells every 0.5 s for ``seconds`` while the panel plays: kernel CPU per cell, pictures per minute."""
    outputs = shell.display_pub.outputs
    before = len([o for o in outputs if o.get("update")])
    cells, cpu0, t0 = 0, time.process_time(), time.monotonic()
    while time.monotonic() - t0 < seconds:
        shell.run_cell("pass")
        cells += 1
        time.sleep(0.5)
    cpu, elapsed = time.process_time() - cpu0, time.monotonic() - t0
    pictures = len([o for o in outputs if o.get("update")]) - before
    return {"cpu ms/cell": cpu / cells * 1000, "pictures/min": pictures * 60 / elapsed,
            "kernel cpu %": cpu / elapsed * 100}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds per phase")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the two arms")
    args = parser.parse_args()

    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    import workbench
    from workbench.views import replay_panel

    shell = InteractiveShell.instance()
    shell.display_pub = CapturingDisplayPublisher()
    workbench.session()
    panel = workbench.replay_panel(workbench.scenarios.guide_word_count())
    interval = replay_panel.PLAYING_PICTURE_EVERY_S
    arms = {"as is": interval, "every cell": 0.0}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in arms}
    try:
        shell.user_ns["panel"] = panel
        shell.run_cell("panel")
        shell.run_cell("panel.play(1.0)")
        one_phase(shell, 5.0)  # the first batches and picture: not measured
        for _ in range(args.rounds):
            for name, every in arms.items():
                replay_panel.PLAYING_PICTURE_EVERY_S = every
                results[name].append(one_phase(shell, args.seconds))
                print(f"  {name}: {results[name][-1]}", flush=True)
        shell.run_cell("panel.pause();")
    finally:
        replay_panel.PLAYING_PICTURE_EVERY_S = interval
        panel.close()
        workbench.stop_all()
    print(f"a replay panel playing 1 batch/s, a trivial cell every 0.5 s; {args.rounds} rounds of "
          f"{args.seconds:.0f} s per arm (each round, then the median)")
    for name, phases in results.items():
        for key in ("cpu ms/cell", "pictures/min", "kernel cpu %"):
            values = [phase[key] for phase in phases]
            each = " ".join(f"{v:7.1f}" for v in values)
            print(f"  {name:11} {key:13} {each}   median {statistics.median(values):7.1f}")


if __name__ == "__main__":
    main()
