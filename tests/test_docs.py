"""The docs are code: every ```python block of README.md and docs/*.md runs, against real Spark.

The blocks of one page run in order, in one IPython shell with ``%load_ext workbench`` (so
``%%stream`` and ``%stream`` blocks run as they would in a notebook), sharing one namespace
that starts empty for each page. The shell and the local Spark session are the suite's
shared ones; the ``env`` fixture checks that a page leaves no query, poller or temporary
folder behind. ```bash and ```text blocks are not run: they hold shell commands and
fragments that need something the suite does not have (a cluster's address).

The pure tests below check the pages themselves: fences are closed, relative links lead to
files, every docs page is reachable from the README, and the README's two commands are the
ones CI runs.
"""

from __future__ import annotations

import re
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from IPython.utils.capture import capture_output

from tests.test_magics import shell  # noqa: F401  (the shared IPython shell with the workbench loaded)

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]

LAUNCH_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/workbench lab"
TEST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/workbench test"

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    language: str
    code: str
    line: int  # the line of the opening fence, 1-based


def fenced_blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order (indented fences too, dedented)."""
    blocks: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, indent = opening["fence"], opening["indent"]
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        if j == len(lines):
            raise ValueError(f"{_name(page)}: the code block opened on line {i + 1} is never closed")
        words = opening["info"].split()
        blocks.append(Block(words[0].lower() if words else "", "\n".join(body) + "\n", i + 1))
        i = j + 1
    return blocks


def python_blocks(page: Path) -> list[Block]:
    return [b for b in fenced_blocks(page) if b.language == "python"]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name


PAGES_WITH_EXAMPLES = [p for p in PAGES if python_blocks(p)]


# -- the pages themselves (pure) ---------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_fences_close_and_relative_links_lead_to_files(page):
    fenced_blocks(page)  # raises for a block never closed
    text = page.read_text(encoding="utf-8")
    broken = []
    for match in _LINK.finditer(text):
        target = match["target"]
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert not broken, f"{_name(page)} links to missing files: {', '.join(broken)}"


def test_every_docs_page_is_linked_from_the_readme_and_the_index():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    topics = [p.name for p in DOCS.glob("*.md") if p.name != "README.md"]
    assert topics, "docs/ has no pages"
    missing = [f"README.md -> docs/{t}" for t in topics if f"(docs/{t})" not in readme]
    missing += [f"docs/README.md -> {t}" for t in topics if f"({t})" not in index]
    assert not missing, f"pages not linked: {', '.join(missing)}"


def test_readme_gives_the_two_commands_each_in_its_own_bash_block():
    bash = [b.code.strip() for b in fenced_blocks(ROOT / "README.md") if b.language == "bash"]
    assert LAUNCH_COMMAND in bash, f"README.md lost the launch command as a ```bash block: {LAUNCH_COMMAND}"
    assert TEST_COMMAND in bash, f"README.md lost the test command as a ```bash block: {TEST_COMMAND}"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f'test_command="{TEST_COMMAND}"' in ci, "CI no longer runs the README's test command verbatim"


def test_block_parser_reads_languages_indents_and_unclosed_fences(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n```python\nx = 1\n```\n- item\n\n  ```json\n  {\"a\": 1}\n  ```\n````text\n```\n````\n")
    assert fenced_blocks(page) == [Block("python", "x = 1\n", 2), Block("json", '{"a": 1}\n', 7),
                                   Block("text", "```\n", 10)]
    page.write_text("```python\nx = 1\n")
    with pytest.raises(ValueError, match="opened on line 1 is never closed"):
        fenced_blocks(page)


# -- the examples, on real Spark ----------------------------------------------------------------------


def _failure(page: Path, number: int, block: Block, error: BaseException, output: str) -> str:
    lines = block.code.rstrip().splitlines()
    head = "\n".join(f"    {line}" for line in lines[:6]) + ("\n    ..." if len(lines) > 6 else "")
    tail = "\n".join(output.rstrip().splitlines()[-25:])
    return (f"{_name(page)}, python block {number} (line {block.line}) failed: "
            f"{type(error).__name__}: {error}\n{head}\n--- its output ---\n{tail}")


def _clear_namespace(shell) -> None:  # noqa: F811  (the fixture's value)
    """Remove the user's variables, as a fresh notebook would have none.

    Not ``shell.reset()``: that replaces the shell's ``__main__`` module with one that
    pyspark's Connect client refuses to import under.
    """
    for key in list(shell.user_ns):
        if not key.startswith("_") and key not in shell.user_ns_hidden:
            del shell.user_ns[key]


def _clean_up(shell) -> None:  # noqa: F811  (the fixture's value)
    """Close what a page left open: replay panels, monitors, the magics' views; stop every stream."""
    import workbench
    from workbench.views.monitor import StreamMonitor
    from workbench.views.replay_panel import ReplayPanel

    magics = shell.magics_manager.registry["StreamMagics"]
    for value in list(shell.user_ns.values()):
        if isinstance(value, (ReplayPanel, StreamMonitor)):
            value.close()
    for name in list(magics.panels):
        magics._close_panel(name)
    for view in list(magics.views.values()):
        view.close() if hasattr(view, "close") else None
    magics.views.clear()
    magics.cell_queries.clear()
    workbench.stop_all()


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=_name)
def test_page_examples_run(page, shell, env, spark, tmp_path, monitor_settings, monkeypatch):  # noqa: F811
    # Folders an example makes with tempfile go under the test's own temporary folder.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _clear_namespace(shell)
    try:
        for number, block in enumerate(python_blocks(page), start=1):
            with capture_output() as captured:
                result = shell.run_cell(textwrap.dedent(block.code), store_history=False)
            error = result.error_before_exec or result.error_in_exec
            if error is not None:
                pytest.fail(_failure(page, number, block, error, captured.stdout + captured.stderr), pytrace=False)
    finally:
        _clean_up(shell)
        _clear_namespace(shell)


@pytest.fixture
def monitor_settings(shell):  # noqa: F811
    """Put back the %config settings a page changes (e.g. ``StreamMagics.default_rows``)."""
    magics = shell.magics_manager.registry["StreamMagics"]
    names = ("poll_interval", "default_rows", "monitor_window", "truncate")
    saved = {name: getattr(magics, name) for name in names}
    yield
    for name, value in saved.items():
        setattr(magics, name, value)
