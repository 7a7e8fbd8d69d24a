"""Record a notebook's checked outputs on an older pyspark, where they differ from the newest's.

A checked cell (``# NBVAL_CHECK_OUTPUT``) stores what the newest pyspark prints. Where an
older release prints something else (an error's wording, a metric it counts differently),
the suite compares that release's run with outputs recorded for it in the cell's metadata
(see ``OUTPUTS_ON`` in ``tests/suite.py``). Run this in an environment with the older
pyspark, e.g. a nox session's::

    .nox/spark-pyspark-4-0-5/bin/python -m tests.notebook_outputs notebooks/04-joins.ipynb --pyspark "<4.1"

It executes the notebook (nbclient, the environment's kernel) and, for every checked cell
whose outputs differ from what the suite would compare them with (nbval's way: pictures
and widget ids left out), records them under the specifier, narrowest entries first; where
they no longer differ, it removes the entry. The notebook's own outputs are left as they are.
Record from the oldest release up (``"<4.1"`` on 4.0, then ``"<4.2"`` on 4.1, ...): an entry
that a broader one with the same outputs covers is dropped. Read the differences it prints
before committing them: they must be Spark's, not a bug.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from tests.suite import OUTPUTS_ON, outputs_for

CHECK = "# NBVAL_CHECK_OUTPUT"
#: What nbval leaves out of a comparison (pyproject runs it without further skips): these
#: keys of an output, and these kinds of an output's ``data`` (pictures; widget model ids).
IGNORED = {"execution_count", "metadata", "transient"}
IGNORED_DATA = {"image/png", "image/jpeg", "application/vnd.jupyter.widget-view+json"}


def comparable(outputs: list) -> list[dict]:
    """``outputs`` as nbval compares them: each stream's text joined, what nbval skips left out.

    >>> comparable([{"output_type": "stream", "name": "stdout", "text": "a\\n"},
    ...             {"output_type": "stream", "name": "stdout", "text": "b\\n"}])
    [{'output_type': 'stream', 'name': 'stdout', 'text': 'a\\nb\\n'}]
    """
    from nbval.plugin import coalesce_streams

    merged = coalesce_streams([nbformat.from_dict(json.loads(json.dumps(output))) for output in outputs])
    kept = []
    for output in merged:
        output = {k: v for k, v in output.items() if k not in IGNORED}
        if "data" in output:
            output["data"] = {k: v for k, v in output["data"].items() if k not in IGNORED_DATA}
        kept.append(output)
    return json.loads(json.dumps(kept))


def _covered(choice: dict) -> set[str]:
    """The releases of noxfile.py's matrix that ``choice``'s specifier admits."""
    from tests.test_packaging import noxfile_constants

    return {v for v in noxfile_constants()["PYSPARK"] if SpecifierSet(choice["pyspark"]).contains(v)}


def _tidy(choices: list[dict]) -> list[dict]:
    """``choices`` narrowest first, without an entry that a broader one with the same outputs covers."""
    ordered = sorted(choices, key=lambda choice: len(_covered(choice)))
    return [choice for i, choice in enumerate(ordered)
            if not any(later["outputs"] == choice["outputs"] and _covered(choice) <= _covered(later)
                       for later in ordered[i + 1:])]


def record(cell, ran_outputs: list, spec: str, version: str) -> list[dict] | None:
    """Record ``ran_outputs`` in ``cell``'s metadata under ``spec`` where the suite would not expect them.

    What ``version`` is compared with is the first recorded entry that admits it, else the
    cell's own outputs (``outputs_for`` in ``tests/suite.py``). An entry for ``spec`` that
    the others make needless is removed; a new one goes before broader ones, since the
    first match wins, and replaces narrower ones that recorded the same outputs. Returns
    the outputs recorded, or None when nothing needed recording.
    """
    others = [c for c in cell.metadata.get("workbench", {}).get(OUTPUTS_ON, []) if c["pyspark"] != spec]
    expected = outputs_for(others, version)
    ran = comparable(ran_outputs)
    recorded = None
    if ran != comparable(cell.outputs if expected is None else expected):
        recorded = ran
        others = _tidy([*others, {"pyspark": spec, "outputs": ran}])
    workbench_meta = cell.metadata.setdefault("workbench", {})
    if others:
        workbench_meta[OUTPUTS_ON] = others
    else:
        workbench_meta.pop(OUTPUTS_ON, None)
    if not workbench_meta:
        del cell.metadata["workbench"]
    return recorded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--pyspark", required=True, help='the releases these outputs hold for, e.g. "<4.2"')
    args = parser.parse_args(argv)
    try:
        spec = SpecifierSet(args.pyspark)
    except InvalidSpecifier:
        parser.error(f"--pyspark {args.pyspark!r} is not a version specifier (e.g. \"<4.2\")")
    from importlib.metadata import version

    running = version("pyspark")
    if not spec.contains(running):
        parser.error(f"this environment's pyspark {running} is not in {args.pyspark!r}")
    newest = _newest()
    if spec.contains(newest):
        parser.error(f"{args.pyspark!r} covers the newest pyspark {newest}, whose outputs are the cells' own")

    stored = nbformat.read(args.notebook, as_version=4)
    run = nbformat.read(args.notebook, as_version=4)
    NotebookClient(run, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(args.notebook.parent)}}).execute()
    changed = 0
    for index, (cell, ran) in enumerate(zip(stored.cells, run.cells)):
        if cell.cell_type != "code" or not cell.source.lstrip().startswith(CHECK):
            continue
        had = any(c["pyspark"] == args.pyspark for c in cell.metadata.get("workbench", {}).get(OUTPUTS_ON, []))
        new = record(cell, ran.outputs, args.pyspark, running)
        title = f"cell {index}: {cell.source.splitlines()[1][:70]!r}"
        if new is not None:
            before = json.dumps(comparable(cell.outputs), indent=1, sort_keys=True).splitlines()
            after = json.dumps(new, indent=1, sort_keys=True).splitlines()
            print(title)
            print("\n".join(difflib.unified_diff(before, after, "newest", args.pyspark, lineterm="", n=1)))
            changed += 1
        elif had:
            print(f"{title}: its entry for {args.pyspark!r} is removed (the newest's, or a narrower one, holds)")
    nbformat.write(stored, args.notebook)
    print(f"{args.notebook.name}: {changed} checked cells differ on pyspark {running}")
    return 0


def _newest() -> str:
    from tests.test_packaging import noxfile_constants

    return noxfile_constants()["PYSPARK"][-1]


if __name__ == "__main__":
    sys.exit(main())
