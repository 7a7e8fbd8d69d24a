"""The built packages, installed as a user installs them: no checkout, no Node.

Builds the sdist and the wheel (``uv build``, or ``python -m build`` without uv: both make
the wheel from the sdist, as a user building from PyPI's sdist would), installs the wheel into a fresh virtualenv and runs
it with a ``PATH`` that has everything this machine has except Node and npm. Then:

* the sdist carries the built extension and its sources, the wheel the package, the
  prebuilt extension and the server extension's config, and neither carries tests or
  build leftovers;
* ``jupyter labextension list`` in that virtualenv shows the extension enabled and OK;
* the quickstart's charts render: ``tests/test_browser.py``'s quickstart test (headless
  Chromium in JupyterLab, four live plotly charts gaining points) runs on the installed
  wheel, from a folder holding only the tests and notebooks.

Slow (a build, an install of about 400 MB, a JupyterLab): marked ``wheel`` and ``browser``,
so ``workbench test --quick`` leaves it out; ``nox -s wheel`` runs it alone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.wheel, pytest.mark.browser]

REPO = Path(__file__).resolve().parent.parent
NAME = "spark-streaming-workbench"
#: Node's commands, which must not be on the fresh virtualenv's PATH.
NODE_COMMANDS = ("node", "nodejs", "npm", "npx", "corepack")


def _run(command: list[str | Path], *, timeout: float, **options) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=timeout,
                          check=False, **options)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel built from this checkout (the wheel from the sdist), in isolated environments.

    With uv (the test extra brings it) when there is one: its build environments come from
    its cache in seconds, where ``python -m build`` installs the build requirements (Node's
    wheel among them) twice, a minute or more.
    """
    out = tmp_path_factory.mktemp("dist")
    uv = _uv()
    command = [uv, "build", "--out-dir", out, REPO] if uv else [sys.executable, "-m", "build", "--outdir", out, REPO]
    _run(command, timeout=900, cwd=REPO)
    return out


def _uv() -> str | None:
    """The uv beside this Python (the test extra brings it) or on ``PATH``, else None."""
    return shutil.which("uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


def _only(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, f"expected one {pattern} in {folder}, found {[p.name for p in found]}"
    return found[0]


def path_without_node(folder: Path, path: str) -> str:
    """A ``PATH`` of one folder of links to every command on ``path`` except Node's.

    Examples
    --------
    >>> bin = path_without_node(Path(tempfile.mkdtemp()), os.environ["PATH"])   # doctest: +SKIP
    >>> shutil.which("node", path=bin) is None
    True
    """
    folder.mkdir(parents=True, exist_ok=True)
    for directory in filter(None, path.split(os.pathsep)):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            link = folder / entry.name
            if entry.name not in NODE_COMMANDS and not link.exists() and os.access(entry.path, os.X_OK):
                link.symlink_to(entry.path)
    return str(folder)


@pytest.fixture(scope="module")
def installed(dist, tmp_path_factory) -> dict[str, str]:
    """The environment of a fresh virtualenv holding the wheel (and its test extra), without Node.

    uv installs it when there is one (the same files as pip, from its cache: about 22 s
    against pip's 36 for these 1.4 GB), else pip.
    """
    root = tmp_path_factory.mktemp("user")
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", venv], timeout=300)
    wheel = _only(dist, "*.whl")
    uv = _uv()
    install = ([uv, "pip", "install", "-q", "--python", venv / "bin" / "python"] if uv
               else [venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-compile"])
    _run([*install, f"{wheel}[test]"], timeout=1800)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTEST_", "VIRTUAL_ENV", "JUPYTER", "PYTHONPATH"))}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), path_without_node(root / "bin", os.environ["PATH"])])
    for name, folder in {"JUPYTER_CONFIG_DIR": "config", "JUPYTER_DATA_DIR": "data", "HOME": "home"}.items():
        (root / folder).mkdir()
        env[name] = str(root / folder)
    env["VIRTUAL_ENV"] = str(venv)
    # A throwaway installation: no class data archive is made for it in the background.
    env["WORKBENCH_CLASS_ARCHIVE"] = "0"
    return env


def test_sdist_carries_the_built_extension_and_its_sources(dist):
    sdist = _only(dist, "*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"pyproject.toml", "workbench/__init__.py", "extensions/src/index.ts", "extensions/package.json",
            "workbench/labextension/package.json", "workbench/labextension/build-source.json"} <= names
    assert any(name.startswith("workbench/labextension/static/") for name in names)
    leftovers = sorted(name for name in names
                       if name.startswith(("extensions/node_modules/", ".ci/", ".nox/", "test-artifacts/", "dist/"))
                       or name.endswith((".whl", ".pyc")))
    assert not leftovers, f"the sdist carries build leftovers: {leftovers[:10]}"


def test_wheel_carries_the_package_and_the_prebuilt_extension(dist):
    with zipfile.ZipFile(_only(dist, "*.whl")) as archive:
        names = set(archive.namelist())
    data = next(name.split("/")[0] for name in names if ".data/" in name)
    labext = f"{data}/data/share/jupyter/labextensions/{NAME}"
    assert {"workbench/__init__.py", "workbench/spark/log4j2.properties", f"{labext}/package.json",
            f"{labext}/install.json", f"{data}/data/etc/jupyter/jupyter_server_config.d/{NAME}.json"} <= names
    static = [name for name in names if name.startswith(f"{labext}/static/") and name.endswith(".js")]
    assert len(static) >= 2, f"the wheel's extension has no built JavaScript: {static}"
    stray = sorted(name for name in names if name.startswith(("tests/", "extensions/", "workbench/labextension/")))
    assert not stray, f"the wheel carries files a user does not need: {stray[:10]}"


def test_the_installed_wheel_needs_no_node(installed):
    found = {command: shutil.which(command, path=installed["PATH"]) for command in NODE_COMMANDS}
    assert not any(found.values()), f"Node is reachable: {found}"
    done = _run(["jupyter", "labextension", "list"], timeout=120, env=installed, cwd=installed["HOME"])
    text = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    assert re.search(rf"{NAME} v0\.1\.0 enabled\s+OK \(python, {NAME}\)", text), text
    assert installed["VIRTUAL_ENV"] in text, f"the extension is not the virtualenv's: {text}"


def test_the_quickstart_charts_render_from_the_wheel(installed, tmp_path):
    # Only the tests and the notebooks: `workbench` can come from nowhere but the wheel.
    copy = tmp_path / "user"
    shutil.copytree(REPO / "tests", copy / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "notebooks", copy / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    env = {**installed, "WORKBENCH_CHROMIUM": os.environ.get("WORKBENCH_CHROMIUM", "") or _chromium()}
    where = _run(["python", "-c", "import workbench; print(workbench.__file__)"], timeout=60, env=env, cwd=copy)
    assert where.stdout.strip().startswith(installed["VIRTUAL_ENV"]), where.stdout
    done = subprocess.run(
        ["python", "-m", "pytest", "-p", "tests.suite", "-p", "no:cacheprovider", "-q", "--rootdir", str(copy),
         "tests/test_browser.py::test_quickstart_in_jupyterlab"],
        capture_output=True, text=True, timeout=900, env=env, cwd=copy, check=False)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-4000:] + done.stderr[-2000:]


def _chromium() -> str:
    from .browser_support import chromium_executable

    return chromium_executable()
