"""Notebook views: ipywidgets and plotly dashboards that read the progress model, never Spark.

Modules are imported on use (``workbench.views.monitor``, ``workbench.views.console``) so
that importing one view does not pull in the others' dependencies.
"""
