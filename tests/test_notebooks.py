"""The teaching notebooks as committed: small, without widget state, checkable by nbval.

nbval itself runs every notebook (``notebooks`` is in pytest's ``testpaths`` with
``--nbval-lax``); these checks keep the committed files honest. In lax mode nbval only
compares cells marked ``# NBVAL_CHECK_OUTPUT`` **that have a stored output and an
execution count**; a marked cell stored without them would be skipped silently, so that
is checked here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import nbformat
import pytest

from tests.suite import OUTPUTS_ON, outputs_for
from tests.test_packaging import noxfile_constants

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
MAX_BYTES = 1_000_000
CHECK = "# NBVAL_CHECK_OUTPUT"
#: The newest pyspark of noxfile.py's matrix: a notebook's own stored outputs are its.
NEWEST = noxfile_constants()["PYSPARK"][-1]


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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_outputs_recorded_for_older_pyspark_are_well_formed(path: Path) -> None:
    # A checked cell's outputs for an older pyspark (tests/notebook_outputs.py records them)
    # replace its stored ones when that pyspark runs the notebook (tests/suite.py).
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        choices = cell.metadata.get("workbench", {}).get(OUTPUTS_ON)
        if choices is None:
            continue
        where = f"{path.name}: cell {cell.source.splitlines()[:2]!r}"
        assert cell.cell_type == "code" and cell.source.lstrip().startswith(CHECK), f"{where} is not checked"
        for choice in choices:
            try:
                spec = SpecifierSet(choice["pyspark"])
            except InvalidSpecifier:
                pytest.fail(f"{where}: {choice['pyspark']!r} is not a version specifier")
            assert not spec.contains(NEWEST), f"{where}: {choice['pyspark']!r} covers the newest pyspark"
            assert choice["outputs"] and choice["outputs"] != cell.outputs, f"{where}: nothing differs"
            assert not any(o.get("output_type") == "error" or o.get("name") == "stderr" for o in choice["outputs"]), (
                f"{where}: outputs for {choice['pyspark']!r} store an error or stderr")


def test_a_cell_is_compared_with_the_outputs_of_the_pyspark_under_test() -> None:
    choices = [{"pyspark": "<4.1", "outputs": ["on 4.0"]}, {"pyspark": "<4.2", "outputs": ["on 4.1"]}]
    assert outputs_for(choices, "4.0.5") == ["on 4.0"]
    assert outputs_for(choices, "4.1.4") == ["on 4.1"]
    assert outputs_for(choices, "4.3.0") is None  # the cell's own outputs


@pytest.mark.kernel
def test_nbval_compares_a_cell_with_the_outputs_recorded_for_the_pyspark_it_runs(tmp_path) -> None:
    # End to end, as `workbench test` runs a notebook: nbval in a kernel, tests/suite.py's hook.
    running = f"=={version('pyspark')}"

    def cell(stored: str, *choices: tuple[str, str]):
        outputs = [nbformat.v4.new_output("stream", name="stdout", text=stored)]
        recorded = [{"pyspark": spec, "outputs": [{"output_type": "stream", "name": "stdout", "text": text}]}
                    for spec, text in choices]
        return nbformat.v4.new_code_cell(f"{CHECK}\nprint('this release')", outputs=outputs, execution_count=1,
                                         metadata={"workbench": {OUTPUTS_ON: recorded}})

    nb = nbformat.v4.new_notebook(cells=[
        # the entry for the running release replaces the stored outputs; the first match wins
        cell("the newest\n", (running, "this release\n"), (">=0", "any release\n")),
        # a wrong entry for the running release fails the cell
        cell("this release\n", (running, "another release\n")),
        # entries for other releases leave the cell compared with its own outputs
        cell("this release\n", ("<0.1", "an old release\n")),
        cell("the newest\n", ("<0.1", "this release\n")),
    ])
    path = tmp_path / "recorded.ipynb"
    nbformat.write(nb, path)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.suite", "-p", "no:cacheprovider", "--nbval-lax",
         "--nbval-current-env", "-rA", "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), str(path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    outcomes = {name: outcome for outcome, name in re.findall(r"^(PASSED|FAILED) (\S+::Cell \d+)", done.stdout, re.M)}
    assert outcomes == {"recorded.ipynb::Cell 0": "PASSED", "recorded.ipynb::Cell 1": "FAILED",
                        "recorded.ipynb::Cell 2": "PASSED", "recorded.ipynb::Cell 3": "FAILED"}, done.stdout[-3000:]
    assert "another release" in done.stdout and "the newest" in done.stdout
