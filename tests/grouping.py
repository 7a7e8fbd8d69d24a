"""A pytest plugin (loaded by ``-p tests.grouping`` in pyproject's addopts): xdist groups.

It is a plugin rather than a ``conftest.py`` hook so that it also applies when only
notebooks are collected (``workbench test notebooks/02-output-modes.ipynb``), where
``tests/conftest.py`` is never loaded.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Keep each test file (and each notebook) on one pytest-xdist worker, in order.

    ``workbench test`` runs the suite on two workers with ``--dist loadgroup``. A notebook's
    cells share one kernel and must run in order on one worker; a file's module-scoped
    fixtures (a cluster, a kernel, a JupyterLab server) are then built once. Tests that
    need a machine-wide resource carry an explicit ``xdist_group`` (e.g. ``connect-port``:
    a local Spark Connect server on the fixed port 15002) and keep it.
    """
    groups: dict[str, str] = {}
    for item in items:  # every item, notebooks' cells included (not only those under tests/)
        mark = item.get_closest_marker("xdist_group")
        if mark is None:
            # Dots would make pytest's reports read the group name as part of the test id.
            group = item.path.relative_to(config.rootpath).as_posix().replace(".", "_")
            item.add_marker(pytest.mark.xdist_group(group))
        else:
            group = mark.args[0]
        groups[item.nodeid] = group
    # Workers take groups in collection order, so the long ones go first and no worker is
    # left with a long group at the end while the other idles. Order within a group stays.
    heavy = {groups[item.nodeid] for item in items if _is_heavy(item)}
    items.sort(key=lambda item: groups[item.nodeid] not in heavy)


def _is_heavy(item: pytest.Item) -> bool:
    """A test that starts processes of its own (kernels, a cluster, a browser) or a notebook cell."""
    return item.path.suffix == ".ipynb" or any(
        item.get_closest_marker(name) for name in ("kernel", "cluster", "browser"))
