"""``python -m workbench ...`` runs the ``workbench`` command (see :mod:`workbench.cli`)."""

from workbench.cli import main

raise SystemExit(main())
