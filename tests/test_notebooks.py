"""The teaching notebooks as committed: small, without widget state, checkable by nbval.

nbval itself runs every notebook (``notebooks`` is in pytest's ``testpaths`` with
``--nbval-lax``); these checks keep the committed files honest. In lax mode nbval only
compares cells marked ``# NBVAL_CHECK_OUTPUT`` **that have a stored output and an
execution count**; a marked cell stored without them would be skipped silently, so that
is checked here.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
MAX_BYTES = 1_000_000
CHECK = "# NBVAL_CHECK_OUTPUT"


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def test_the_course_is_there() -> None:
    names = {p.name for p in NOTEBOOKS}
    assert "00-quickstart.ipynb" in names
    assert len(NOTEBOOKS) >= 2, names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_is_small_and_has_no_widget_state(path: Path) -> None:
    assert path.stat().st_size < MAX_BYTES, f"{path.name} is {path.stat().st_size} bytes: strip it"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert "widgets" not in nb.metadata, f"{path.name} stores widget state: run nbstripout on it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_checked_cells_store_what_nbval_compares(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    checked = [c for c in nb.cells if c.cell_type == "code" and c.source.lstrip().startswith(CHECK)]
    assert checked, f"{path.name} checks no output: mark its deterministic cells {CHECK}"
    for cell in checked:
        first_line = cell.source.splitlines()[1] if len(cell.source.splitlines()) > 1 else ""
        assert cell.execution_count is not None and cell.outputs, (
            f"{path.name}: checked cell {first_line!r} has no stored output, so nbval would skip it"
        )
        assert cell.metadata.get("keep_output") is True, (
            f"{path.name}: checked cell {first_line!r} lacks keep_output metadata; nbstripout would drop its output"
        )
        kinds = {o.output_type for o in cell.outputs}
        assert "error" not in kinds, f"{path.name}: checked cell {first_line!r} stores an error"
        assert not any(o.get("name") == "stderr" for o in cell.outputs), (
            f"{path.name}: checked cell {first_line!r} stores stderr (log noise would make it flaky)"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_unchecked_cells_store_no_output(path: Path) -> None:
    # Outputs of unchecked cells (timings, rates, widget views) would only be noise in diffs.
    nb = nbformat.read(path, as_version=4)
    noisy = [c.source.splitlines()[0] for c in nb.cells
             if c.cell_type == "code" and c.outputs and not c.source.lstrip().startswith(CHECK)]
    assert not noisy, f"{path.name}: unchecked cells with stored output: {noisy}; run nbstripout"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_stops_its_streams(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    starts = any("%%stream" in s or "workbench.start(" in s or "replay_panel(" in s for s in code)
    if starts:
        tail = "\n".join(code[-3:])
        assert "%stream stop --all" in tail or "stop_all()" in tail, (
            f"{path.name} starts streams but does not stop them all at the end"
        )
