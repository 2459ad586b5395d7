// `npm run lint`: fails naming each loop of folders of src/ that import each other (folder-graph.ts).
//
//   tsx scripts/lint/folder-cycles.ts
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeLoop, folderGraph, folderLoops, relativeImportsOf, resolveImport, type FileImport } from './folder-graph.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const files = new Set(
  readdirSync(path.join(repo, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.tsx?$/.test(f))
    .map((f) => `src/${f.split(path.sep).join('/')}`),
);
const imports: FileImport[] = [];
for (const from of files) {
  for (const specifier of relativeImportsOf(readFileSync(path.join(repo, from), 'utf8'))) {
    const to = resolveImport(from, specifier, files);
    if (to !== undefined) imports.push({ from, to });
  }
}
const loops = folderLoops(folderGraph(imports));
for (const loop of loops) process.stderr.write(`${describeLoop(loop)}\n`);
if (loops.length > 0) {
  process.stderr.write('folders of src/ must not import each other in a loop (docs/architecture.md, "Folder rules")\n');
  process.exit(1);
}
