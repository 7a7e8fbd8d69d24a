"""Maintainer tool: execute a teaching notebook and store only what nbval should check.

Usage::

    python -m tests.notebook_tools refresh notebooks/01-event-time-and-watermarks.ipynb [...]

The notebook runs top to bottom in a fresh kernel of the current interpreter (as nbval
does with ``--nbval-current-env``). Afterwards:

* cells whose first line is ``# NBVAL_CHECK_OUTPUT`` keep their outputs (minus stderr
  streams) and execution count, and get ``keep_output: true`` metadata;
* every other code cell is stored without outputs or execution count;
* saved widget state (``metadata.widgets``) is removed.

A failing cell stops the refresh and leaves the file untouched.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

CHECK = "# NBVAL_CHECK_OUTPUT"


def is_checked(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and cell.source.lstrip().startswith(CHECK)


def strip(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Keep outputs only on checked cells; drop widget state and stderr."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        if is_checked(cell):
            cell.metadata["keep_output"] = True
            cell.outputs = [o for o in cell.outputs if o.get("name") != "stderr"]
        else:
            cell.metadata.pop("keep_output", None)
            cell.outputs = []
            cell.execution_count = None
    return nb


def refresh(path: Path, timeout: int = 300) -> None:
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    nbformat.write(strip(nb), path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.notebook_tools")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("refresh", help="execute notebooks and store the checked outputs")
    run.add_argument("paths", nargs="+", type=Path)
    only = sub.add_parser("strip", help="strip without executing")
    only.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for path in args.paths:
        if args.command == "refresh":
            refresh(path)
        else:
            nbformat.write(strip(nbformat.read(path, as_version=4)), path)
        print(f"{args.command}: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
