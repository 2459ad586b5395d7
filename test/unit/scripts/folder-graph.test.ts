import { describe, expect, it } from 'vitest';
import {
  describeLoop,
  folderGraph,
  folderLoops,
  folderOf,
  relativeImportsOf,
  resolveImport,
  type FileImport,
} from '../../../scripts/lint/folder-graph.js';

const imports = (...pairs: Array<[string, string]>): FileImport[] => pairs.map(([from, to]) => ({ from, to }));
const loopsOf = (...pairs: Array<[string, string]>): string[][] => folderLoops(folderGraph(imports(...pairs))).map((l) => l.folders);

describe('the imports a file makes', () => {
  it('counts value, type-only, re-exports and dynamic imports, relative ones only', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from '../b/b.js';",
      "export { c } from './c.js';",
      "export type * from './d.js';",
      "const e = await import('../e/e.js');",
      "import { readFileSync } from 'node:fs';",
      "import ts from 'typescript';",
      "import {\n  f,\n  g,\n} from './fg.js';",
    ].join('\n');
    expect(relativeImportsOf(text)).toEqual(['./a.js', '../b/b.js', './c.js', './d.js', '../e/e.js', './fg.js']);
  });

  it.each<[string, string, string | undefined]>([
    ['a .js specifier is its .ts source', './b.js', 'src/a/b.ts'],
    ['or its .tsx source', '../ui/view.js', 'src/ui/view.tsx'],
    ['an index file', '../c/index.js', 'src/c/index.ts'],
    ['nothing outside the files given', '../../scripts/x.js', undefined],
    ['nothing that is not a source file', './data.json', undefined],
  ])('resolved from src/a/file.ts: %s', (_name, specifier, want) => {
    const files = new Set(['src/a/b.ts', 'src/ui/view.tsx', 'src/c/index.ts']);
    expect(resolveImport('src/a/file.ts', specifier, files)).toBe(want);
  });

  it.each<[string, string | undefined]>([
    ['src/config/config.ts', 'config'],
    ['src/api/auth/token-verifier.ts', 'api'],
    ['src/top-level.ts', undefined],
    ['scripts/x.ts', undefined],
  ])('%s is in folder %s', (file, folder) => {
    expect(folderOf(file)).toBe(folder);
  });
});

describe('folder loops', () => {
  it.each<[string, Array<[string, string]>, string[][]]>([
    [
      'none in a chain',
      [
        ['src/a/x.ts', 'src/b/y.ts'],
        ['src/b/y.ts', 'src/c/z.ts'],
      ],
      [],
    ],
    [
      'none within one folder, subfolders included',
      [
        ['src/a/x.ts', 'src/a/sub/y.ts'],
        ['src/a/sub/y.ts', 'src/a/x.ts'],
      ],
      [],
    ],
    [
      'two folders through files that never import each other in a circle',
      [
        ['src/a/x.ts', 'src/b/y.ts'],
        ['src/b/z.ts', 'src/a/w.ts'],
      ],
      [['a', 'b', 'a']],
    ],
    [
      'three folders',
      [
        ['src/config/config.ts', 'src/retention/job.ts'],
        ['src/retention/job.ts', 'src/db/knex.ts'],
        ['src/db/knex.ts', 'src/config/tls.ts'],
      ],
      [['config', 'retention', 'db', 'config']],
    ],
    [
      'the shortest loop of a knot',
      [
        ['src/a/1.ts', 'src/b/1.ts'],
        ['src/b/1.ts', 'src/c/1.ts'],
        ['src/c/1.ts', 'src/a/1.ts'],
        ['src/b/2.ts', 'src/a/2.ts'],
      ],
      [['a', 'b', 'a']],
    ],
    [
      'one for each separate knot',
      [
        ['src/a/1.ts', 'src/b/1.ts'],
        ['src/b/1.ts', 'src/a/1.ts'],
        ['src/x/1.ts', 'src/y/1.ts'],
        ['src/y/1.ts', 'src/x/1.ts'],
        ['src/b/1.ts', 'src/x/1.ts'],
      ],
      [
        ['a', 'b', 'a'],
        ['x', 'y', 'x'],
      ],
    ],
  ])('%s', (_name, pairs, want) => {
    expect(loopsOf(...pairs)).toEqual(want);
  });

  it('names the file import behind each step of the loop', () => {
    const [loop] = folderLoops(
      folderGraph(imports(['src/b/z.ts', 'src/a/w.ts'], ['src/a/x.ts', 'src/b/y.ts'], ['src/a/v.ts', 'src/b/y.ts'])),
    );
    expect(loop && describeLoop(loop)).toBe(
      ['folder import loop: a -> b -> a', '  src/a/v.ts imports src/b/y.ts', '  src/b/z.ts imports src/a/w.ts'].join('\n'),
    );
  });
});
