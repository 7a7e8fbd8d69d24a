// plotly.js-dist-min ships no type declarations; charts.ts uses it untyped.
declare module 'plotly.js-dist-min';
