"""Where the workbench's JupyterLab extension is installed, and whether its build is current.

The extension's source is ``extensions/`` of a checkout; ``pip install`` builds it into
``workbench/labextension/`` and installs that as
``share/jupyter/labextensions/spark-streaming-workbench``. The build records a hash of the
sources it was built from (``build-source.json``); :func:`source_hash` recomputes it the
same way, so a stale build is found without Node. Imports nothing heavy (``workbench
doctor`` uses it).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

__all__ = [
    "LABEXTENSION_NAME", "SOURCE_DIR", "BUILD_DIR", "LabextensionStatus", "labextension_status",
    "source_hash", "recorded_hash", "source_files", "doctor_line", "REBUILD_HINT",
]

#: The npm package name, which is also the folder under ``share/jupyter/labextensions``.
LABEXTENSION_NAME = "spark-streaming-workbench"
PACKAGE_DIR = Path(__file__).resolve().parent
#: The extension's source in a checkout (absent in an installed wheel).
SOURCE_DIR = PACKAGE_DIR.parent / "extensions"
#: Where the build writes the extension in a checkout.
BUILD_DIR = PACKAGE_DIR / "labextension"
#: The file the build writes, holding the hash of the sources it was built from.
HASH_FILE = "build-source.json"
REBUILD_HINT = "rebuild with `pip install -e .` (or `npm run build` in extensions/)"

_TOP_FILES = ("package.json", "package-lock.json", "tsconfig.json")
_FOLDERS = ("src", "style", "schema")


def source_files(source_dir: Path = SOURCE_DIR) -> list[str]:
    """The files the build depends on, as sorted '/'-separated paths relative to ``source_dir``.

    Examples
    --------
    >>> "src/index.ts" in source_files()          # doctest: +SKIP
    True
    """
    names = [name for name in _TOP_FILES if (source_dir / name).is_file()]
    for folder in _FOLDERS:
        names += [
            path.relative_to(source_dir).as_posix()
            for path in (source_dir / folder).rglob("*") if path.is_file()
        ]
    return sorted(names)


def source_hash(source_dir: Path = SOURCE_DIR) -> str:
    """SHA-256 of the extension's sources, as ``extensions/scripts/source-hash.mjs`` computes it.

    Each file contributes ``"<path>\\0<sha256 of its bytes>\\n"``, in path order.
    """
    total = hashlib.sha256()
    for name in source_files(source_dir):
        digest = hashlib.sha256((source_dir / name).read_bytes()).hexdigest()
        total.update(f"{name}\0{digest}\n".encode())
    return total.hexdigest()


def recorded_hash(build_dir: Path) -> str | None:
    """The source hash a built extension at ``build_dir`` records, or None."""
    try:
        return str(json.loads((build_dir / HASH_FILE).read_text(encoding="utf-8"))["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def installed_dirs(data_paths: Iterable[str] | None = None) -> list[Path]:
    """Every installed copy of the extension on Jupyter's data path, highest priority first."""
    if data_paths is None:
        from jupyter_core.paths import jupyter_path

        data_paths = jupyter_path()
    found = [Path(path) / "labextensions" / LABEXTENSION_NAME for path in data_paths]
    return [path for path in found if (path / "package.json").is_file()]


def _disabled(config_paths: Sequence[str]) -> bool:
    """Whether ``page_config.json`` on the config path disables the extension (or all its plugins)."""
    for folder in config_paths:
        try:
            config = json.loads((Path(folder) / "labconfig" / "page_config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        disabled = config.get("disabledExtensions") or {}
        names = [name for name, off in disabled.items() if off] if isinstance(disabled, dict) else list(disabled)
        if LABEXTENSION_NAME in names:
            return True
    return False


@dataclass(frozen=True)
class LabextensionStatus:
    """What :func:`labextension_status` found.

    Attributes
    ----------
    installed : bool
    enabled : bool
        Installed and not disabled in JupyterLab's page config.
    version : str or None
        The installed copy's version.
    path : Path or None
        The installed copy JupyterLab uses.
    stale : bool or None
        Whether the installed copy was built from other sources than ``extensions/`` holds
        now; None when there are no sources to compare with (a wheel install).
    """

    installed: bool
    enabled: bool
    version: str | None
    path: Path | None
    stale: bool | None


def labextension_status(
    data_paths: Iterable[str] | None = None,
    config_paths: Sequence[str] | None = None,
    source_dir: Path = SOURCE_DIR,
) -> LabextensionStatus:
    """Whether the workbench's JupyterLab extension is installed, enabled and current.

    Examples
    --------
    >>> status = labextension_status()            # doctest: +SKIP
    >>> status.installed, status.enabled, status.version   # doctest: +SKIP
    (True, True, '0.1.0')
    """
    dirs = installed_dirs(data_paths)
    if not dirs:
        return LabextensionStatus(False, False, None, None, None)
    path = dirs[0]
    try:
        version = str(json.loads((path / "package.json").read_text(encoding="utf-8")).get("version"))
    except (OSError, ValueError):
        version = None
    if config_paths is None:
        from jupyter_core.paths import jupyter_config_path

        config_paths = jupyter_config_path()
    stale = None
    if (source_dir / "package.json").is_file():
        stale = recorded_hash(path) != source_hash(source_dir)
    return LabextensionStatus(True, not _disabled(config_paths), version, path, stale)


def doctor_line(status: LabextensionStatus | None = None) -> str:
    """The ``workbench doctor`` line for the extension.

    Examples
    --------
    >>> doctor_line(LabextensionStatus(False, False, None, None, None))
    'extension   not installed (reinstall the package: pip install -e .)'
    >>> doctor_line(LabextensionStatus(True, True, "0.1.0", Path("/x"), False))
    'extension   0.1.0 enabled (/x)'
    """
    status = labextension_status() if status is None else status
    if not status.installed:
        return f"{'extension':<11} not installed (reinstall the package: pip install -e .)"
    state = "enabled" if status.enabled else (
        f"disabled (jupyter labextension enable {LABEXTENSION_NAME})"
    )
    line = f"{'extension':<11} {status.version} {state} ({status.path})"
    if status.stale:
        line += f"; built from older sources: {REBUILD_HINT}"
    return line
