import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build, type Manifest } from 'vite';

/**
 * `npm run build`'s last step: the web console into dist/console (console.vite.config.ts), then the
 * JavaScript a first load fetches (the entry and the chunks it imports statically), gzipped,
 * printed and held to a budget: the console must open quickly on a slow link at 3 a.m.
 */

export const FIRST_LOAD_BUDGET_BYTES = 250 * 1024;
const root = fileURLToPath(new URL('../..', import.meta.url));
const configFile = path.join(root, 'console.vite.config.ts');

export interface ConsoleBuild {
  outDir: string;
  firstLoad: Array<{ file: string; gzipBytes: number }>;
  firstLoadGzipBytes: number;
}

/** The chunks loaded before the console can render: the entry and its static imports, transitively. */
export function firstLoadChunks(manifest: Manifest): string[] {
  const files = new Set<string>();
  const visit = (key: string) => {
    const chunk = manifest[key];
    if (!chunk || files.has(chunk.file)) return;
    files.add(chunk.file);
    for (const dep of chunk.imports ?? []) visit(dep);
  };
  for (const [key, chunk] of Object.entries(manifest)) if (chunk.isEntry) visit(key);
  return [...files].filter((f) => f.endsWith('.js'));
}

export async function buildConsole(opts: { outDir?: string; quiet?: boolean } = {}): Promise<ConsoleBuild> {
  const outDir = opts.outDir ?? path.join(root, 'dist', 'console');
  await build({ configFile, logLevel: opts.quiet ? 'warn' : 'info', build: { outDir } });
  const manifestDir = path.join(outDir, '.vite');
  const manifest = JSON.parse(await readFile(path.join(manifestDir, 'manifest.json'), 'utf8')) as Manifest;
  const firstLoad = await Promise.all(
    firstLoadChunks(manifest).map(async (file) => ({
      file,
      gzipBytes: gzipSync(await readFile(path.join(outDir, file)), { level: 9 }).length,
    })),
  );
  // read by this script only: not a file the service should serve
  await rm(manifestDir, { recursive: true, force: true });
  return { outDir, firstLoad, firstLoadGzipBytes: firstLoad.reduce((sum, c) => sum + c.gzipBytes, 0) };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const result = await buildConsole();
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  for (const c of result.firstLoad) console.log(`  ${c.file}  ${kb(c.gzipBytes)} gzipped`);
  console.log(`console first-load JavaScript: ${kb(result.firstLoadGzipBytes)} gzipped (budget ${kb(FIRST_LOAD_BUDGET_BYTES)})`);
  if (result.firstLoadGzipBytes > FIRST_LOAD_BUDGET_BYTES) {
    console.error('console build: first-load JavaScript over budget');
    process.exit(1);
  }
}
