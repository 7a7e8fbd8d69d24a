"""Record a notebook's checked outputs on an older pyspark, where they differ from the newest's.

A checked cell (``# NBVAL_CHECK_OUTPUT``) stores what the newest pyspark prints. Where an
older release prints something else (an error's wording, a metric it counts differently),
the suite compares that release's run with outputs recorded for it in the cell's metadata
(see ``OUTPUTS_ON`` in ``tests/suite.py``). Run this in an environment with the older
pyspark, e.g. a nox session's::

    .nox/spark-pyspark-4-0-5/bin/python -m tests.notebook_outputs notebooks/04-joins.ipynb --pyspark "<4.1"

It executes the notebook (nbclient, the environment's kernel) and, for every checked cell
whose outputs differ from the stored ones, records them under the specifier; where they
no longer differ, it removes the entry. The notebook's own outputs are left as they are.
Read the differences it prints before committing them: they must be Spark's, not a bug.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from packaging.specifiers import SpecifierSet

from tests.suite import OUTPUTS_ON

CHECK = "# NBVAL_CHECK_OUTPUT"
#: What nbval leaves out of a comparison (pyproject runs it without further skips).
IGNORED = {"execution_count", "metadata", "transient"}


def comparable(outputs: list) -> list[dict]:
    """``outputs`` as nbval compares them: streams joined per name, counts and metadata left out."""
    merged: list[dict] = []
    for output in outputs:
        output = {k: v for k, v in dict(output).items() if k not in IGNORED}
        if output.get("output_type") == "stream" and merged and merged[-1].get("name") == output["name"] \
                and merged[-1].get("output_type") == "stream":
            merged[-1] = {**merged[-1], "text": merged[-1]["text"] + output["text"]}
        else:
            merged.append(output)
    return json.loads(json.dumps(merged))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--pyspark", required=True, help='the releases these outputs hold for, e.g. "<4.2"')
    args = parser.parse_args(argv)
    spec = SpecifierSet(args.pyspark)
    from importlib.metadata import version

    if not spec.contains(version("pyspark")):
        parser.error(f"this environment's pyspark {version('pyspark')} is not in {args.pyspark!r}")

    stored = nbformat.read(args.notebook, as_version=4)
    run = nbformat.read(args.notebook, as_version=4)
    NotebookClient(run, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(args.notebook.parent)}}).execute()
    changed = 0
    for index, (cell, ran) in enumerate(zip(stored.cells, run.cells)):
        if cell.cell_type != "code" or not cell.source.lstrip().startswith(CHECK):
            continue
        choices = [c for c in cell.metadata.get("workbench", {}).get(OUTPUTS_ON, []) if c["pyspark"] != args.pyspark]
        if comparable(ran.outputs) != comparable(cell.outputs):
            new = comparable(ran.outputs)
            choices.append({"pyspark": args.pyspark, "outputs": new})
            before = json.dumps(comparable(cell.outputs), indent=1).splitlines()
            after = json.dumps(new, indent=1).splitlines()
            print(f"cell {index}: {cell.source.splitlines()[1][:70]!r}")
            print("\n".join(difflib.unified_diff(before, after, "newest", args.pyspark, lineterm="", n=1)))
            changed += 1
        workbench_meta = cell.metadata.setdefault("workbench", {})
        if choices:
            workbench_meta[OUTPUTS_ON] = choices
        else:
            workbench_meta.pop(OUTPUTS_ON, None)
        if not workbench_meta:
            del cell.metadata["workbench"]
    nbformat.write(stored, args.notebook)
    print(f"{args.notebook.name}: {changed} checked cells differ on pyspark {version('pyspark')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
