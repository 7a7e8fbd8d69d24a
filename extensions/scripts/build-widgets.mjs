// Build the widgets' anywidget modules into the Python package (workbench/views/static/):
//
//   chartgrid.js       ChartGrid's `_esm`: the loader (src/anywidget/chartgrid.ts)
//   sparkui_button.js  SparkUIButton's `_esm` (src/anywidget/sparkui_button.ts)
//   widgets.js         the chart code the kernel sends to pages without the extension
//                      (src/anywidget/module.ts); plotly.js is not in it
//
// Each is one self-contained, minified ES module, bundled by webpack from tsc's output in
// lib/ (run after `build:lib`). Users installing a wheel get them built; no Node needed.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import webpack from 'webpack';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const config = {
  mode: 'production',
  context: root,
  entry: {
    chartgrid: './lib/anywidget/chartgrid.js',
    sparkui_button: './lib/anywidget/sparkui_button.js',
    widgets: './lib/anywidget/module.js'
  },
  target: ['web', 'es2020'],
  devtool: false,
  experiments: { outputModule: true },
  output: {
    path: join(root, '..', 'workbench', 'views', 'static'),
    filename: '[name].js',
    module: true,
    chunkFormat: 'module',
    library: { type: 'module' },
    clean: true
  },
  optimization: { splitChunks: false, runtimeChunk: false },
  performance: { hints: false }
};

webpack(config, (error, stats) => {
  if (error || stats.hasErrors()) {
    console.error(error ?? stats.toString({ all: false, errors: true }));
    process.exit(1);
  }
  console.log(stats.toString({ all: false, assets: true }));
});
