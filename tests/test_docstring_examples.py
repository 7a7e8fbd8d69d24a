"""Every docstring example in the workbench runs and shows what it says.

The modules are found by their source: any ``>>>`` line not marked ``doctest: +SKIP``
(examples that need a live Spark or a notebook are marked so). A module whose examples all
went would drop out of the list by itself, so the list's size is checked too.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import tempfile
from pathlib import Path

import pytest

import workbench

ROOT = Path(workbench.__file__).resolve().parent


def _docstrings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return [text for node in ast.walk(tree) if isinstance(node, kinds) and (text := ast.get_docstring(node))]


def modules_with_examples() -> list[str]:
    """The workbench's modules with at least one example that runs (read from their source, not imported)."""
    names, parser = [], doctest.DocTestParser()
    for path in sorted(ROOT.rglob("*.py")):
        examples = [e for text in _docstrings(path) for e in parser.get_examples(text, str(path))]
        if any(not example.options.get(doctest.SKIP) for example in examples):
            parts = path.relative_to(ROOT.parent).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = modules_with_examples()


def test_the_examples_of_every_layer_are_found():
    assert len(MODULES) >= 55, MODULES
    for layer in ("workbench.options", "workbench.progress.diagnosis", "workbench.replay.spec",
                  "workbench.spark.stream_answers", "workbench.views.charts", "workbench.testing.recording"):
        assert layer in MODULES


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module, tmp_path, monkeypatch):
    # The examples' temp folders land in a folder of the test's own, which must be empty after.
    scratch = tmp_path / "examples"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
    assert not list(scratch.iterdir()), f"the examples left {sorted(p.name for p in scratch.iterdir())}"
