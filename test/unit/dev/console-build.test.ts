import type { Manifest } from 'vite';
import { describe, expect, it } from 'vitest';
import { firstLoadChunks } from '../../../src/dev/console-build.js';

const chunk = (file: string, extra: Partial<Manifest[string]> = {}): Manifest[string] => ({ file, ...extra });

describe("the console build's first-load JavaScript (what the 250 KB budget counts)", () => {
  it.each<[string, Manifest, string[]]>([
    [
      'the entry alone',
      { 'index.html': chunk('assets/index-a.js', { isEntry: true, css: ['assets/index-a.css'] }) },
      ['assets/index-a.js'],
    ],
    [
      'the entry and what it imports statically, transitively, once each',
      {
        'index.html': chunk('assets/index-a.js', { isEntry: true, imports: ['_vendor', '_shared'] }),
        _vendor: chunk('assets/vendor-b.js', { imports: ['_shared'] }),
        _shared: chunk('assets/shared-c.js'),
      },
      ['assets/index-a.js', 'assets/vendor-b.js', 'assets/shared-c.js'],
    ],
    [
      'not what it imports lazily (a page loaded on demand)',
      {
        'index.html': chunk('assets/index-a.js', { isEntry: true, dynamicImports: ['src/page.tsx'] }),
        'src/page.tsx': chunk('assets/page-d.js', { isDynamicEntry: true }),
      },
      ['assets/index-a.js'],
    ],
  ])('%s', (_name, manifest, expected) => {
    expect(firstLoadChunks(manifest)).toEqual(expected);
  });
});
