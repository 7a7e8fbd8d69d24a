// The widget module's name and version, as the Python models name them
// (workbench/views/charts.py: MODULE_NAME, MODULE_VERSION).
export const MODULE_NAME = 'spark-streaming-workbench';
export const MODULE_VERSION = '0.1.0';
