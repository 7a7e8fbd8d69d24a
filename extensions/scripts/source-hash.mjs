// Print (or, with --write FILE, record) the SHA-256 of the extension's sources.
//
// The build writes it into the built extension (build-source.json); the Python test
// recomputes it from extensions/ the same way (workbench/_labext.py: source_hash) and
// fails when the shipped build is stale. Sources: package.json, package-lock.json,
// tsconfig.json and every file under src/, style/ and schema/.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const TOP_FILES = ['package.json', 'package-lock.json', 'tsconfig.json'];
const FOLDERS = ['src', 'style', 'schema'];

function walk(folder) {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

const files = [
  ...TOP_FILES.map((name) => join(root, name)),
  ...FOLDERS.flatMap((name) => walk(join(root, name)))
]
  .map((path) => relative(root, path).split(sep).join('/'))
  .sort();
const total = createHash('sha256');
for (const name of files) {
  const digest = createHash('sha256').update(readFileSync(join(root, name))).digest('hex');
  total.update(`${name}\0${digest}\n`);
}
const record = { sha256: total.digest('hex'), files: files.length };
const at = process.argv.indexOf('--write');
if (at >= 0) {
  const target = join(root, process.argv[at + 1]);
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, JSON.stringify(record, null, 2) + '\n');
}
console.log(`${record.sha256} (${record.files} files)`);
