"""What ``jupyter lab`` would run with: its arguments and the settings of Jupyter's config files.

``workbench lab`` reads them before it starts JupyterLab, to leave out a default the user
gives (an address, a root folder) and to refuse what would undo its safe defaults. Reads
its arguments as traitlets reads them (:func:`lab_arguments`) and the config files with
traitlets' own loaders (:func:`configured_settings`). Imports nothing heavy at import time
(the command line uses it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

__all__ = ["LAB_FLAGS", "ROOT_DIR_SETTINGS", "CONFIG_STEMS", "lab_arguments", "configured_settings"]


#: ``jupyter lab``'s options that take no value (``--watch`` may take one, so it is not here).
LAB_FLAGS = frozenset({
    "allow-root", "autoreload", "collaborative", "core-mode", "custom-css", "debug", "dev-mode",
    "expose-app-in-browser", "extensions-in-dev-mode", "generate-config", "no-browser", "no-script", "script",
    "show-config", "show-config-json", "skip-dev-build", "splice-source", "y", "h", "help", "help-all", "version"})
#: The spellings of JupyterLab's root folder setting.
ROOT_DIR_SETTINGS = frozenset({"notebook-dir", "ServerApp.root_dir", "ServerApp.notebook_dir",
                               "NotebookApp.notebook_dir"})


def lab_arguments(extra: Sequence[str]) -> list[tuple[str | None, str, str]]:
    """``jupyter lab``'s arguments read as traitlets reads them.

    An option's value follows its ``=``, else it is the next argument, unless the option is
    one of :data:`LAB_FLAGS`; any other argument is a positional (a file or folder to open).

    Parameters
    ----------
    extra : sequence of str
        Arguments for ``jupyter lab``.

    Returns
    -------
    list of (str or None, str, str)
        (setting, value, as given) for each option (a flag's value is ``""``), and
        (None, argument, argument) for each positional.

    Examples
    --------
    >>> lab_arguments(["--no-browser", "nb.ipynb", "--ServerApp.ip", "::1", "--port=9000"])
    [('no-browser', '', '--no-browser'), (None, 'nb.ipynb', 'nb.ipynb'), ('ServerApp.ip', '::1', '--ServerApp.ip ::1'), ('port', '9000', '--port=9000')]
    """
    read: list[tuple[str | None, str, str]] = []
    index = 0
    while index < len(extra):
        arg = extra[index]
        name, sep, value = arg.lstrip("-").partition("=")
        if not arg.startswith("-"):
            read.append((None, arg, arg))
        elif sep or name in LAB_FLAGS or index + 1 == len(extra) or extra[index + 1].startswith("-"):
            read.append((name, value, arg))
        else:
            index += 1
            read.append((name, extra[index], f"{arg} {extra[index]}"))
        index += 1
    return read


#: The config files ``jupyter lab`` reads, in its order (each across the config path, the later
#: winning): the base file every Jupyter application reads, the server's (and the classic
#: notebook server's, still honoured) and JupyterLab's own.
CONFIG_STEMS = ("jupyter_config", "jupyter_notebook_config", "jupyter_server_config", "jupyter_lab_config")


def configured_settings(
    names: Iterable[str], config_paths: Sequence[str] | None = None, *, config_file: str | None = None,
) -> dict[str, tuple[Any, Path]]:
    """What Jupyter's config files set of the settings ``names``, each with the file that sets it.

    The files are those ``jupyter lab`` reads (:data:`CONFIG_STEMS`, each as ``.py`` then
    ``.json``) merged as Jupyter merges them: file by file in that order, each across the
    folders of ``config_paths`` from the last to the first, so that a folder earlier on the
    path wins. A ``.py`` file runs, as it does when Jupyter starts; one that fails is left for
    Jupyter to report.

    Parameters
    ----------
    names : iterable of str
        Settings as ``"Class.trait"``, e.g. ``"IdentityProvider.token"``.
    config_paths : sequence of str, optional
        The folders to read, highest priority first; Jupyter's config path by default.
    config_file : str, optional
        A ``--config`` file given to ``jupyter lab``: read in place of the server's own files
        (``jupyter_server_config``), as Jupyter reads it.

    Returns
    -------
    dict
        ``{name: (value, file)}`` for each setting a file sets.

    Examples
    --------
    >>> configured_settings(["IdentityProvider.token"], config_paths=[])
    {}
    """
    from traitlets.config.loader import JSONFileConfigLoader, PyFileConfigLoader

    if config_paths is None:
        from jupyter_core.paths import jupyter_config_path

        config_paths = jupyter_config_path()
    names = list(names)
    found: dict[str, tuple[Any, Path]] = {}
    for stem in CONFIG_STEMS:
        folders, base = list(reversed(config_paths)), stem
        if stem == "jupyter_server_config" and config_file:
            chosen = Path(config_file).expanduser().resolve()
            folders, base = [str(chosen.parent)], chosen.stem
        for folder in folders:
            for loader in (PyFileConfigLoader, JSONFileConfigLoader):
                filename = base + (".py" if loader is PyFileConfigLoader else ".json")
                path = Path(folder) / filename
                if not path.is_file():
                    continue
                try:
                    config = loader(filename, path=str(folder)).load_config()
                except Exception:  # noqa: BLE001 - Jupyter reports a broken file as it starts
                    continue
                for name in names:
                    if name in config:  # traitlets' Config reads "Class.trait" without making the section
                        section, _, trait = name.partition(".")
                        found[name] = (config[section][trait], path)
    return found
