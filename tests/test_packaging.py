"""Packaging and architecture checks; pure Python, no Spark.

* ``environment.yml`` (conda) and ``pyproject.toml`` (pip) must describe the same
  environment. No conda channel can be solved on the project's machines, so this test is
  what keeps the conda file honest.
* The package's shape (see "The layers" in docs/architecture.md): only ``workbench/spark/`` talks
  to Spark, ``progress/`` and ``replay/`` stay free of UI and Spark, ``views/`` reads the
  progress history and never Spark. Checked by parsing every module's imports with ``ast``.
"""

from __future__ import annotations

import ast
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "workbench"

# ---------------------------------------------------------------------------------------------
# pyproject.toml <-> environment.yml
# ---------------------------------------------------------------------------------------------

# Conda entries that are not Python packages of pyproject (the interpreter, the JVM, pip).
CONDA_ONLY = {"python", "openjdk", "pip"}
# conda-forge names that differ from the PyPI name of the same package.
CONDA_NAMES = {"python-build": "build", "playwright-python": "playwright"}


def normalise(name: str) -> str:
    """PEP 503 name normalisation (conda-forge names follow it closely enough for our set)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def split_pip(spec: str) -> tuple[str, str]:
    """``"pyspark[connect]>=4.0,<5"`` -> ``("pyspark", ">=4.0,<5")`` (extras dropped)."""
    found = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([^;]*?)\s*(?:;.*)?", spec)
    assert found, f"cannot read requirement {spec!r}"
    return normalise(found.group(1)), found.group(2).replace(" ", "")


def split_conda(spec: str) -> tuple[str, str]:
    """``"pandas>=2.2,<3"`` -> ``("pandas", ">=2.2,<3")``; ``"python=3.11"`` -> ``("python", "=3.11")``."""
    found = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*?)\s*", spec)
    assert found, f"cannot read conda spec {spec!r}"
    return normalise(found.group(1)), found.group(2).replace(" ", "")


@pytest.fixture(scope="module")
def pyproject() -> dict:
    with open(REPO / "pyproject.toml", "rb") as file:
        return tomllib.load(file)


@pytest.fixture(scope="module")
def environment() -> dict:
    # PyYAML arrives with JupyterLab (jupyter_server -> jupyter_events -> pyyaml).
    yaml = pytest.importorskip("yaml", reason="PyYAML is needed to read environment.yml")
    with open(REPO / "environment.yml", encoding="utf-8") as file:
        return yaml.safe_load(file)


@pytest.fixture(scope="module")
def pip_specs(pyproject) -> dict[str, str]:
    project = pyproject["project"]
    specs = [*project["dependencies"], *(spec for extra in project["optional-dependencies"].values() for spec in extra)]
    parsed = dict(split_pip(spec) for spec in specs)
    assert len(parsed) == len(specs), "pyproject names a package twice"
    return parsed


@pytest.fixture(scope="module")
def conda_specs(environment) -> dict[str, str]:
    entries = [entry for entry in environment["dependencies"] if isinstance(entry, str)]
    parsed = {CONDA_NAMES.get(name, name): spec for name, spec in map(split_conda, entries)}
    assert len(parsed) == len(entries), "environment.yml names a package twice"
    return parsed


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("pyspark[connect]>=4.0,<5", ("pyspark", ">=4.0,<5")),
        ("jupyter_client>=8", ("jupyter-client", ">=8")),
        ("Foo.Bar >= 1 ; python_version >= '3.11'", ("foo-bar", ">=1")),
        ("traitlets", ("traitlets", "")),
    ],
)
def test_split_pip(spec, expected):
    assert split_pip(spec) == expected


def test_conda_and_pip_name_the_same_packages(pip_specs, conda_specs):
    conda_packages = set(conda_specs) - CONDA_ONLY
    assert conda_packages == set(pip_specs), (
        f"only in pyproject: {sorted(set(pip_specs) - conda_packages)}; "
        f"only in environment.yml: {sorted(conda_packages - set(pip_specs))}"
    )


def test_conda_and_pip_use_the_same_version_bounds(pip_specs, conda_specs):
    different = {
        name: (pip_spec, conda_specs.get(name))
        for name, pip_spec in pip_specs.items()
        if conda_specs.get(name) != pip_spec
    }
    assert not different, f"pyproject vs environment.yml bounds differ: {different}"


def test_both_bound_pandas_below_3(pip_specs, conda_specs):
    assert "<3" in pip_specs["pandas"].split(",")
    assert "<3" in conda_specs["pandas"].split(",")


def test_same_python(pyproject, conda_specs, matrix):
    # pyproject accepts the Pythons noxfile.py tests; conda's environment is the full suite's, the oldest.
    assert pyproject["project"]["requires-python"] == bounds_of(matrix["PYTHON"])
    assert conda_specs["python"] == f"={matrix['PYTHON'][0]}"


def test_conda_has_java_and_installs_the_project(environment, conda_specs):
    assert environment["channels"] == ["conda-forge"]
    assert conda_specs["openjdk"] == "=17"
    pip_sections = [entry["pip"] for entry in environment["dependencies"] if isinstance(entry, dict)]
    assert pip_sections == [["-e ."]]


def test_log4j_properties_are_package_data(pyproject):
    # hatchling ships every file git tracks under the listed packages, data files included.
    wheel = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["workbench"]
    assert not any("properties" in pattern for pattern in wheel.get("exclude", []))
    assert list((PACKAGE / "spark").glob("*.properties")), "workbench/spark has no .properties file"


# ---------------------------------------------------------------------------------------------
# Architecture: who may import what
# ---------------------------------------------------------------------------------------------

UI = ("ipywidgets", "anywidget", "plotly")
SPARK = ("pyspark", "py4j")


@dataclass(frozen=True)
class Import:
    """One imported module name, as absolute dotted path, with where it was imported.

    ``from X import a`` gives ``Import("X", ...)`` and ``Import("X.a", ..., base="X")``:
    ``a`` may be a submodule of ``X`` or a name defined in ``X``, which only the package's
    files can tell (see :func:`import_graph`).
    """

    module: str
    line: int
    lazy: bool = False  # inside a function: runs only when that function is called
    base: str | None = None  # for a name of `from X import name`: X
    typing_only: bool = False  # under `if TYPE_CHECKING:`: read by type checkers, never run


def module_name(path: Path, root: Path = PACKAGE) -> str:
    """``workbench/progress/poller.py`` -> ``workbench.progress.poller``; ``__init__`` -> its package."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool) -> list[Import]:
    """Every module a source file imports (at any depth: lazy imports in functions count too).

    Relative imports are resolved against ``module``. For ``from X import name`` both ``X``
    and ``X.name`` are reported, since ``name`` may be a submodule.
    """
    package = module if is_package else module.rpartition(".")[0]
    found: list[Import] = []
    tree = ast.parse(source)
    eager = {id(node) for node in _module_level(tree)}
    typing_only = {id(node) for node in _type_checking_only(tree)}
    for node in ast.walk(tree):
        lazy = id(node) not in eager
        typed = id(node) in typing_only
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, node.lineno, lazy, typing_only=typed) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                if node.level - 1 >= len(base_parts):
                    raise ValueError(f"{module}: relative import beyond the top-level package")
                base = ".".join(base_parts[: len(base_parts) - (node.level - 1)])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.append(Import(target, node.lineno, lazy, typing_only=typed))
            found.extend(
                Import(f"{target}.{alias.name}", node.lineno, lazy, base=target, typing_only=typed)
                for alias in node.names if alias.name != "*"
            )
    return found


def _type_checking_only(tree: ast.AST):
    """Statements inside ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): never run."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
            (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
            or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
        ):
            for statement in node.body:
                yield from ast.walk(statement)


def _module_level(tree: ast.AST):
    """Statements that run when the module is imported (not inside functions)."""
    stack = list(ast.iter_child_nodes(tree))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


# (which modules, what they must not import, why). Lazy imports inside functions count: a
# lower layer reaching up only when called still depends on the layer above.
RULES: list[tuple[tuple[str, ...], tuple[str, ...], str]] = [
    (("workbench.progress",),
     ("workbench.spark", "workbench.views", "workbench.magics", "workbench.replay", *UI),
     "progress/ is pure Python: no Spark, no UI, no replay"),
    (("workbench.replay",),
     ("workbench.spark", "workbench.views", "workbench.magics", *UI),
     "replay/ specs are pure Python: no Spark, no UI (a spec becomes a stream through the facade's "
     "workbench.replay_stream, not through a method of the spec)"),
    (("workbench.views",), ("workbench.spark", "workbench.magics"),
     "views read the progress history, never Spark, and never the magics"),
    (("workbench.spark",), ("workbench.views", "workbench.magics"),
     "spark/ is the bottom layer: views and magics call it, never the other way round"),
]

# The known exceptions, each a lazy import from one module into one other, with its reason.
# The test fails when an exception is no longer used, so this list can only shrink.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("workbench.spark.handle", "workbench.views.monitor"):
        "StreamHandle.monitor(), the public shortcut for StreamMonitor(handle)",
    ("workbench.spark.replay_view", "workbench.views.monitor"):
        "ReplayStreamView.monitor(), the same shortcut for a replayed run",
}


def violations(module: str, imports: list[Import]) -> list[str]:
    """The architecture rules ``module`` breaks, one message per offending import."""
    problems: dict[tuple[int, str], str] = {}  # one message per import statement and rule
    for imported in imports:
        broken = []
        if within(imported.module, SPARK) and not within(module, ("workbench.spark",)):
            broken.append("only workbench.spark may import pyspark/py4j")
        excepted = imported.lazy and (module, imported.base or imported.module) in EXCEPTIONS
        broken += [why for owners, forbidden, why in RULES
                   if within(module, owners) and within(imported.module, forbidden) and not excepted]
        where = " (lazily, inside a function)" if imported.lazy else ""
        for why in broken:
            problems.setdefault((imported.line, why),
                                f"{module}:{imported.line} imports {imported.module}{where}: {why}")
    return list(problems.values())


def import_graph(imports: dict[str, list[Import]]) -> dict[str, dict[str, Import]]:
    """``{module: {workbench module it imports: the import}}`` over the given modules.

    Every import that runs counts, top-level and lazy alike: a lazy import only delays a
    circle to the first call. Imports under ``if TYPE_CHECKING:`` never run and are left
    out. ``from X import a`` is an edge to ``X.a`` when that is a module, else to
    ``X``; the parent packages Python initialises on the way are not edges (every
    submodule would otherwise form a circle with a package ``__init__`` importing it).
    """
    known = set(imports)
    graph: dict[str, dict[str, Import]] = {module: {} for module in imports}
    for module, found in imports.items():
        named = {(i.line, i.base) for i in found if i.base is not None}
        for imported in found:
            if imported.typing_only:
                continue
            if imported.base is not None:
                target = imported.module if imported.module in known else imported.base
            elif (imported.line, imported.module) in named:
                continue  # the `X` of `from X import a, b`: its names say where the edges go
            else:
                target = imported.module
            while target and target not in known:  # `import workbench.spark.x.y` -> the module
                target = target.rpartition(".")[0]
            if target and target != module:
                graph[module].setdefault(target, imported)
    return graph


def import_cycles(graph: dict[str, dict[str, Import]]) -> list[list[str]]:
    """Each import circle once, as ``[a, b, ..., a]`` (strongly connected components, Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, {})):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    cycles = []
    for component in components:
        # One circle through the component's first module, for the message.
        members, start = set(component), component[0]
        paths = {start: [start]}
        queue = [start]
        while queue:
            node = queue.pop(0)
            for target in sorted(graph[node]):
                if target == start:
                    queue = []
                    cycles.append(paths[node] + [start])
                    break
                if target in members and target not in paths:
                    paths[target] = paths[node] + [target]
                    queue.append(target)
    return cycles


def describe_cycle(cycle: list[str], graph: dict[str, dict[str, Import]]) -> str:
    steps = []
    for source, target in zip(cycle, cycle[1:]):
        imported = graph[source][target]
        lazy = ", lazily" if imported.lazy else ""
        steps.append(f"{source}:{imported.line} imports {target}{lazy}")
    return "import circle: " + "; ".join(steps)


def package_modules() -> dict[Path, str]:
    return {
        path: module_name(path)
        for path in sorted(PACKAGE.rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def package_imports() -> dict[str, list[Import]]:
    return {
        module: imports_of(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
        for path, module in package_modules().items()
    }


@pytest.mark.parametrize(
    ("module", "is_package", "source", "broken"),
    [
        ("workbench.replay.spec", False, "from ..spark.replay_source import build_stream", True),
        ("workbench.replay.spec", False, "def f():\n    from ..spark import replay_source", True),
        ("workbench.replay.spec", False,
         "def stream(self, spark):\n    from ..spark.replay_source import build_stream", True),
        ("workbench.replay.saved", False, "class S:\n    def f(self):\n        import workbench.views.monitor", True),
        ("workbench.replay.spec", False, "from .. import spark", True),
        ("workbench.replay.spec", False, "from .. import magics", True),
        ("workbench.replay.spec", False, "from ..progress.diagnosis import parse_interval", False),
        ("workbench.replay.spec", False, "from .values import parse_duration", False),
        ("workbench.progress", True, "from .history import ProgressHistory", False),
        ("workbench.progress", True, "from ..views import monitor", True),
        ("workbench.progress.diagnosis", False, "from ..replay.late import late_totals", True),
        ("workbench.progress.diagnosis", False, "def f():\n    from ..spark import current_env", True),
        ("workbench.progress.poller", False, "import plotly.graph_objects as go", True),
        ("workbench.progress.poller", False, "from ipywidgets import widgets", True),
        ("workbench.views.monitor", False, "from ..progress.records import BatchProgress", False),
        ("workbench.views.monitor", False, "import ipywidgets", False),
        ("workbench.views.monitor", False, "from .monitor_charts import chart_specs", False),
        ("workbench.views.monitor", False, "from ..spark.handle import StreamHandle", True),
        ("workbench.views.monitor", False, "from workbench.spark import current_env", True),
        ("workbench.views.monitor", False, "from pyspark.sql import functions", True),
        ("workbench.views.replay_panel", False, "def f():\n    from ..magics.parser import parse", True),
        ("workbench.views.replay_panel", False, "from ..replay.saved import save_run", False),
        ("workbench.magics", True, "import py4j", True),
        ("workbench.magics", True, "from .. import spark", False),
        ("workbench", True, "from .spark import current_env", False),
        ("workbench.spark.session", False, "from pyspark.sql import SparkSession", False),
        ("workbench.spark.session", False, "from .._java import require_java", False),
    ],
)
def test_rule_checker(module, is_package, source, broken):
    # Guards the checker itself, so the real check below cannot pass by seeing nothing.
    assert bool(violations(module, imports_of(source, module, is_package))) is broken


def test_rule_message_names_the_module_and_the_import():
    found = imports_of("def stream(self, spark):\n    from ..spark.replay_source import build_stream\n",
                       "workbench.replay.spec", False)
    message = violations("workbench.replay.spec", found)[0]
    assert message.startswith("workbench.replay.spec:2 imports workbench.spark.replay_source (lazily"), message


def _graph(sources: dict[str, str]) -> dict[str, dict[str, Import]]:
    return import_graph({module: imports_of(source, module, module.count(".") < 2)
                         for module, source in sources.items()})


@pytest.mark.parametrize(
    ("sources", "circles"),
    [
        # The circle the replay specs once had: spec -> replay_source lazily, and back.
        ({"workbench.replay.spec": "def stream(self, spark):\n    from ..spark.replay_source import build_stream",
          "workbench.spark.replay_source": "from ..replay.spec import Replay",
          "workbench.replay": "from .spec import Replay", "workbench.spark": ""},
         [["workbench.replay.spec", "workbench.spark.replay_source", "workbench.replay.spec"]]),
        # A package's __init__ importing its submodules is no circle, nor is the submodule
        # importing a sibling through the package (`from . import sibling`).
        ({"workbench.replay": "from .spec import Replay\nfrom . import scenarios",
          "workbench.replay.spec": "from .values import parse_duration",
          "workbench.replay.values": "", "workbench.replay.scenarios": "from . import spec"}, []),
        # ... but a submodule importing a name the __init__ defines is one.
        ({"workbench.replay": "from .spec import Replay",
          "workbench.replay.spec": "from . import FATES"},
         [["workbench.replay", "workbench.replay.spec", "workbench.replay"]]),
        ({"workbench": "def f():\n    from .magics import load",
          "workbench.magics": "import workbench.spark.streams",
          "workbench.spark": "", "workbench.spark.streams": "def g():\n    import workbench"},
         [["workbench", "workbench.magics", "workbench.spark.streams", "workbench"]]),
        # An annotation-only import under `if TYPE_CHECKING:` never runs: no circle.
        ({"workbench.spark.replay_run": "from .replay_view import StepReport",
          "workbench.spark.replay_view": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                         "    from .replay_run import ReplayRun",
          "workbench.spark": ""}, []),
    ],
)
def test_cycle_finder(sources, circles):
    assert import_cycles(_graph(sources)) == circles


def test_cycle_message_names_each_import():
    graph = _graph({"workbench.replay.spec": "import json\ndef f():\n    from ..spark.replay_source import x",
                    "workbench.spark.replay_source": "from ..replay.spec import Replay",
                    "workbench.spark": "", "workbench.replay": ""})
    (cycle,) = import_cycles(graph)
    assert describe_cycle(cycle, graph) == (
        "import circle: workbench.replay.spec:3 imports workbench.spark.replay_source, lazily; "
        "workbench.spark.replay_source:1 imports workbench.replay.spec"
    )


def test_module_names():
    assert module_name(PACKAGE / "__init__.py") == "workbench"
    assert module_name(PACKAGE / "spark" / "__init__.py") == "workbench.spark"
    assert module_name(PACKAGE / "progress" / "poller.py") == "workbench.progress.poller"


def test_every_subpackage_is_scanned():
    modules = package_modules()
    for required in ("spark", "progress"):
        assert (PACKAGE / required).is_dir(), f"workbench/{required}/ is missing"
    for name in ("spark", "progress", "views", "replay", "magics"):
        folder = PACKAGE / name
        # An empty folder (a placeholder not yet filled) is not a subpackage.
        if folder.is_dir() and any(entry.name != "__pycache__" for entry in folder.iterdir()):
            assert any(folder in path.parents for path in modules), f"no module found in workbench/{name}/"


def test_package_respects_the_architecture():
    problems = []
    for module, found in package_imports().items():
        problems += violations(module, found)
    assert not problems, "architecture rules broken:\n" + "\n".join(problems)


def test_every_exception_is_still_used_and_lazy():
    used = {(module, imported.module): imported.lazy
            for module, found in package_imports().items() for imported in found
            if imported.base is None and (module, imported.module) in EXCEPTIONS}
    assert set(used) == set(EXCEPTIONS), f"exceptions no longer used (remove them): {set(EXCEPTIONS) - set(used)}"
    assert all(used.values()), f"an excepted import is no longer lazy: {used}"


def test_package_has_no_import_circles():
    graph = import_graph(package_imports())
    assert sum(map(len, graph.values())) > 50, "the import graph is nearly empty: the checker sees nothing"
    circles = [describe_cycle(cycle, graph) for cycle in import_cycles(graph)]
    assert not circles, "import circles among workbench modules:\n" + "\n".join(circles)


#: An import of another of the extension's sources: ``import ... from './x'`` (``import type``
#: and ``export ... from`` too), ``import './x'`` and ``import('./x')``.
TS_IMPORT = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}/[^'"]+)['"]""")


def extension_import_graph(sources: dict[str, str]) -> dict[str, dict[str, Import]]:
    """``{source: {source it imports: the import}}`` over TypeScript sources named by path under ``src/``.

    ``import type`` counts as any import: the compiler erases it, but it is still a step in
    the graph a reader follows, so the modules that draw take their shared types from a
    module below them (``series.ts``), not from one another. Imports of packages
    (``@jupyterlab/...``, ``plotly.js-dist-min``) are not edges.

    Examples
    --------
    >>> graph = extension_import_graph({"a": "import type { T } from './b';", "b": "import { f } from './a';"})
    >>> import_cycles(graph)
    [['a', 'b', 'a']]
    """
    graph: dict[str, dict[str, Import]] = {name: {} for name in sources}
    for name, text in sources.items():
        folder = Path(name).parent
        for found in TS_IMPORT.finditer(text):
            target = os.path.normpath(folder / found.group(1)).removesuffix(".ts")
            line = text.count("\n", 0, found.start()) + 1
            assert target in sources, f"{name}.ts:{line} imports {found.group(1)!r}, which is not a source"
            if target != name:
                graph[name].setdefault(target, Import(target, line))
    return graph


#: The JupyterLab extension's TypeScript sources.
EXTENSION_SRC = REPO / "extensions" / "src"


def extension_sources() -> list[Path]:
    """The extension's TypeScript sources, declaration files (``*.d.ts``, no code) left out."""
    return [path for path in sorted(EXTENSION_SRC.rglob("*.ts")) if not path.name.endswith(".d.ts")]


def test_extension_has_no_import_circles():
    sources = {str(path.relative_to(EXTENSION_SRC).with_suffix("")): path.read_text(encoding="utf-8")
               for path in extension_sources()}
    graph = extension_import_graph(sources)
    assert sum(map(len, graph.values())) > 30, "the extension's import graph is nearly empty: the checker sees nothing"
    circles = [describe_cycle(cycle, graph) for cycle in import_cycles(graph)]
    assert not circles, "import circles among the extension's sources:\n" + "\n".join(circles)


@pytest.mark.parametrize(
    ("sources", "circles"),
    [
        # What draw.ts, patch.ts and ranges.ts once had: types imported from the module above
        # (one knot of three modules, reported by one circle through it).
        ({"draw": "import { patchPoints } from './patch';\nimport { within } from './ranges';",
          "patch": "import {\n  axisName\n} from './paths';\nimport type { ITrace } from './draw';",
          "ranges": "import type { ITrace } from './draw';", "paths": ""},
         [["draw", "patch", "draw"]]),
        ({"host": "export * from './streams/model';", "streams/model": "import { API } from '../host';"},
         [["host", "streams/model", "host"]]),
    ],
)
def test_extension_cycle_finder(sources, circles):
    assert import_cycles(extension_import_graph(sources)) == circles


def test_extension_import_graph_reads_every_kind_of_import():
    # Folders, re-exports, imports for their side effects or on demand; packages are no edges.
    graph = extension_import_graph({
        "index": "import { streamsPlugin } from './streams/plugin';\nexport { x } from './host';\n"
                 "import { Widget } from '@lumino/widgets';",
        "streams/plugin": "import { IStreamInfo } from '../protocol';\nimport './panel';",
        "streams/panel": "const m = await import('../host');\nimport(/* chunk */ 'plotly.js-dist-min');",
        "protocol": "", "host": ""})
    assert {name: sorted(edges) for name, edges in graph.items()} == {
        "index": ["host", "streams/plugin"], "streams/plugin": ["protocol", "streams/panel"],
        "streams/panel": ["host"], "protocol": [], "host": []}
    with pytest.raises(AssertionError, match=r"a\.ts:1 imports './gone', which is not a source"):
        extension_import_graph({"a": "import { b } from './gone';"})


def test_extension_cycle_message_names_each_import():
    graph = extension_import_graph({"draw": "// drawing\nimport { patchPoints } from './patch';",
                                    "patch": "import type { ITrace } from './draw';"})
    (cycle,) = import_cycles(graph)
    assert describe_cycle(cycle, graph) == "import circle: draw:2 imports patch; patch:1 imports draw"


#: Modules of one job stay short enough to read at a sitting: about 500 lines, with some slack
#: so that a docstring more does not force a split. A module that outgrows it has become two jobs.
MODULE_LINES = 550


def source_modules() -> list[Path]:
    """The package's Python modules and the JupyterLab extension's TypeScript sources (built output left out)."""
    return [*package_modules(), *extension_sources()]


def test_every_module_stays_short():
    modules = source_modules()
    assert any(path.suffix == ".ts" for path in modules), "no TypeScript source found under extensions/src"
    long = {str(path.relative_to(REPO)): lines for path in modules
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES}
    assert not long, (f"modules over {MODULE_LINES} lines (split each by its jobs, see docs/architecture.md): "
                      f"{long}")


# ---------------------------------------------------------------------------------------------
# Runtime dependencies: what the workbench imports
# ---------------------------------------------------------------------------------------------

#: Runtime dependencies the workbench needs without importing them. (The Spark Connect
#: client's packages come with pyspark's ``connect`` extra; extras are not listed here.)
USED_WITHOUT_IMPORT = {
    "jupyterlab": "the application `workbench lab` runs",
    "ipykernel": "the kernel the notebooks run in",
    "jupyter-server-proxy": "a server extension: it serves the Spark UI inside JupyterLab",
}


#: Packages imported only by modules that the package itself loads, so it is there when they
#: run: ``{distribution: (modules, why)}``. Not runtime dependencies of the workbench.
IMPORTED_BY_THEIR_HOST = {
    "pytest": ({"workbench.testing.plugin"}, "the pytest plugin, which only pytest loads (pytest11 entry point)"),
}


def imported_distributions() -> dict[str, set[str]]:
    """``{distribution: workbench modules importing it}`` for every third-party import in workbench/.

    Lazy imports inside functions count: they run when the function does. A top-level name
    no installed distribution provides maps to ``"?<name>"``.
    """
    import sys
    from importlib.metadata import packages_distributions

    providers = packages_distributions()
    found: dict[str, set[str]] = {}
    for module, imports in package_imports().items():
        for imported in imports:
            top = imported.module.partition(".")[0]
            if top == "workbench" or top in sys.stdlib_module_names:
                continue
            for distribution in providers.get(top, [f"?{top}"]):
                found.setdefault(normalise(distribution), set()).add(module)
    return found


def test_runtime_dependencies_are_what_the_workbench_imports(pyproject):
    declared = {split_pip(spec)[0] for spec in pyproject["project"]["dependencies"]}
    imported = imported_distributions()
    assert {"pyspark", "pandas", "ipywidgets"} <= set(imported), "the import scan sees nothing"
    hosted = {name: modules for name, (modules, _why) in IMPORTED_BY_THEIR_HOST.items()}
    assert all(imported.get(name) == modules for name, modules in hosted.items()), \
        f"IMPORTED_BY_THEIR_HOST is out of date: {hosted}, but {({n: imported.get(n) for n in hosted})} import them"
    undeclared = {name: sorted(modules) for name, modules in imported.items()
                  if name not in declared and name not in hosted}
    assert not undeclared, f"imported by workbench/ but not a runtime dependency in pyproject: {undeclared}"
    unused = declared - set(imported) - set(USED_WITHOUT_IMPORT)
    assert not unused, (f"runtime dependencies workbench/ never imports: {sorted(unused)} (move them to the "
                        "`test` extra, or say in USED_WITHOUT_IMPORT why they are needed)")
    assert not set(USED_WITHOUT_IMPORT) - declared, "USED_WITHOUT_IMPORT names a package pyproject does not"


def test_no_built_packages_are_committed():
    import shutil
    import subprocess

    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "*.whl", "*.tar.gz", "*.egg"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.split()
    assert not tracked, f"built packages are committed: {tracked}"


@pytest.mark.parametrize("private", ["_show_string", "_jsq"])
def test_a_pyspark_private_is_read_in_one_place(private):
    """pyspark privates the workbench needs go through one wrapper that says why."""
    places = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (isinstance(node, ast.Attribute) and node.attr == private)
        or (isinstance(node, ast.Constant) and node.value == private)  # getattr(query, "_jsq")
    ]
    assert len(places) == 1, f"pyspark's {private} is read in {len(places)} places: {places}"


# ---------------------------------------------------------------------------------------------
# Declared versions: what noxfile.py's matrix tests
# ---------------------------------------------------------------------------------------------


def noxfile_constants() -> dict[str, object]:
    """The literal module-level constants of ``noxfile.py`` (read with ast: nox need not be installed)."""
    constants = {}
    for node in ast.parse((REPO / "noxfile.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        elif isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id.isupper():
                try:
                    constants[target.id] = ast.literal_eval(value)
                except ValueError:
                    pass
    return constants


def minor(version: str) -> tuple[int, int]:
    major, minor_, *_ = version.split(".")
    return int(major), int(minor_)


def bounds_of(versions: list[str]) -> str:
    """``["4.0.5", "4.3.0"]`` -> ``">=4.0,<4.4"``: the oldest tested minor up to the newest."""
    (low_major, low), (high_major, high) = minor(versions[0]), minor(versions[-1])
    return f">={low_major}.{low},<{high_major}.{high + 1}"


def versions_line(pyspark: list[str], jupyterlab: list[str], python: list[str]) -> str:
    def listing(versions: list[str]) -> str:
        names = [".".join(map(str, minor(v))) for v in versions]
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

    return f"Tested with pyspark {listing(pyspark)} and JupyterLab {listing(jupyterlab)}, on Python {listing(python)}"


@pytest.fixture(scope="module")
def matrix() -> dict[str, list[str]]:
    constants = noxfile_constants()
    found = {name: constants.get(name) for name in ("PYSPARK", "JUPYTERLAB", "PYTHON", "SMOKE", "BROWSER",
                                                    "BROWSER_SMOKE")}
    assert all(isinstance(value, list) and value for value in found.values()), f"noxfile.py lost its matrix: {found}"
    return found  # type: ignore[return-value]


def test_tested_bounds_and_line():
    assert bounds_of(["4.0.5", "4.1.4", "4.3.0"]) == ">=4.0,<4.4"
    assert bounds_of(["3.11", "3.12"]) == ">=3.11,<3.13"
    assert versions_line(["4.0.5", "4.1.4", "4.2.1"], ["4.0.13", "4.6.6"], ["3.11"]) == (
        "Tested with pyspark 4.0, 4.1 and 4.2 and JupyterLab 4.0 and 4.6, on Python 3.11")


@pytest.mark.parametrize("package", ["pyspark", "jupyterlab", "python"])
def test_matrix_has_one_version_of_each_minor_oldest_first(matrix, package):
    versions = matrix[package.upper()]
    assert all(re.fullmatch(r"\d+\.\d+" if package == "python" else r"\d+\.\d+\.\d+", v) for v in versions), versions
    minors = [minor(v) for v in versions]
    assert minors == sorted(set(minors)), f"noxfile.py's {package} versions: one per minor, oldest first: {versions}"


@pytest.mark.parametrize("package", ["pyspark", "python"])
def test_matrix_has_every_minor_in_between(matrix, package):
    minors = [minor(v) for v in matrix[package.upper()]]
    expected = [(minors[0][0], m) for m in range(minors[0][1], minors[-1][1] + 1)]
    assert minors == expected, f"a {package} minor is not tested: {matrix[package.upper()]}"


@pytest.mark.parametrize("package", ["pyspark", "jupyterlab"])
def test_declared_bounds_are_the_tested_versions(pip_specs, conda_specs, matrix, package):
    expected = bounds_of(matrix[package.upper()])
    assert (pip_specs[package], conda_specs[package]) == (expected, expected), (
        f"{package}: pyproject and environment.yml must declare what noxfile.py tests, {expected}")


def test_classifiers_and_readme_say_what_is_tested(pyproject, matrix):
    classifiers = pyproject["project"]["classifiers"]
    majors = {minor(v)[0] for v in matrix["JUPYTERLAB"]}
    assert {f"Framework :: Jupyter :: JupyterLab :: {m}" for m in majors} <= set(classifiers)
    python = [c.rsplit(" :: ", 1)[1] for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert python == matrix["PYTHON"], f"noxfile.py tests Python {matrix['PYTHON']}; classifiers say {python}"
    line = versions_line(matrix["PYSPARK"], matrix["JUPYTERLAB"], matrix["PYTHON"])
    assert line in (REPO / "README.md").read_text(encoding="utf-8"), f"README.md lost the line: {line!r}"


def test_the_matrix_tiers_name_tests_that_exist(matrix):
    """Each entry is a test file, or a test in one (``file::name``) that the file defines, or
    one case of such a test (``file::name[id]``) whose id the file spells out."""
    tiers = ("SMOKE", "BROWSER", "BROWSER_SMOKE")
    missing = []
    for entry in (entry for tier in tiers for entry in matrix[tier]):
        path, _, test = entry.partition("::")
        test, _, case = test.partition("[")
        source = (REPO / path).read_text(encoding="utf-8") if (REPO / path).is_file() else None
        if source is None or (test and not re.search(rf"^def {re.escape(test)}\(", source, re.MULTILINE)) or (
                case and f'"{case.removesuffix("]")}"' not in source):
            missing.append(entry)
    assert not missing, f"noxfile.py's {'/'.join(tiers)} name tests that do not exist: {missing}"


def test_files_that_start_kernels_are_marked_kernel():
    """``workbench test --quick`` leaves out the ``kernel`` tests: a file that drives real
    Jupyter kernels (``tests.kernels``) must say so, or the quick tier silently grows."""
    unmarked = []
    for path in sorted((REPO / "tests").glob("test_*.py")):
        source = path.read_text(encoding="utf-8")
        if re.search(r"^from tests\.kernels import|^import tests\.kernels", source, re.MULTILINE) \
                and "pytest.mark.kernel" not in source:
            unmarked.append(path.name)
    assert not unmarked, f"these files start Jupyter kernels but carry no pytest.mark.kernel: {unmarked}"
