import { mkdir, open, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Manifest } from 'vite';
import type { Logger } from '../observability/logger.js';

/**
 * The web console's Vite build into dist/console (console.vite.config.ts), for `npm run build`
 * (scripts/console/build.ts, which holds the first load to its budget) and for dev mode, which
 * serves the console as production does and so builds it first when missing or stale. Several dev
 * modes starting at once (tests) build it once: the first takes a lock, the others wait and find
 * it fresh.
 */

/** the JavaScript a first load fetches, gzipped: the console must open quickly on a slow link at 3 a.m. */
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
  // loaded only when a build runs: a dev mode whose console is fresh does not pay for Vite
  const { build } = await import('vite');
  await build({ configFile, logLevel: opts.quiet ? 'warn' : 'info', build: { outDir } });
  const manifestDir = path.join(outDir, '.vite');
  const manifest = JSON.parse(await readFile(path.join(manifestDir, 'manifest.json'), 'utf8')) as Manifest;
  const firstLoad = await Promise.all(
    firstLoadChunks(manifest).map(async (file) => ({
      file,
      gzipBytes: gzipSync(await readFile(path.join(outDir, file)), { level: 9 }).length,
    })),
  );
  // read by the build only: not a file the service should serve
  await rm(manifestDir, { recursive: true, force: true });
  return { outDir, firstLoad, firstLoadGzipBytes: firstLoad.reduce((sum, c) => sum + c.gzipBytes, 0) };
}

const LOCK_STALE_MS = 5 * 60_000;

async function mtimeMs(file: string): Promise<number> {
  return (await stat(file).catch(() => undefined))?.mtimeMs ?? -1;
}

/** the newest modification time of the files below dir (and the extra files) */
async function newestSource(dir: string, extra: string[]): Promise<number> {
  let newest = -1;
  for (const f of extra) newest = Math.max(newest, await mtimeMs(f));
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])) {
    if (entry.isFile()) newest = Math.max(newest, await mtimeMs(path.join(entry.parentPath, entry.name)));
  }
  return newest;
}

export async function ensureConsoleBuilt(opts: { repoRoot: string; logger: Logger }): Promise<'fresh' | 'built'> {
  const outDir = path.join(opts.repoRoot, 'dist', 'console');
  const index = path.join(outDir, 'index.html');
  const sources = () => newestSource(path.join(opts.repoRoot, 'src', 'console'), [path.join(opts.repoRoot, 'console.vite.config.ts')]);
  if ((await mtimeMs(index)) >= (await sources())) return 'fresh';

  await mkdir(path.join(opts.repoRoot, 'dist'), { recursive: true });
  const lockFile = path.join(opts.repoRoot, 'dist', '.console-build.lock');
  for (;;) {
    const lock = await open(lockFile, 'wx').catch(() => undefined);
    if (lock) {
      try {
        if ((await mtimeMs(index)) >= (await sources())) return 'fresh';
        opts.logger.info({ outDir }, 'building the console (src/console, first start or changed sources)');
        // built beside, then swapped in: a server reading the old folder never sees half a build
        const staging = `${outDir}.building-${process.pid}`;
        await buildConsole({ outDir: staging, quiet: true });
        await rm(outDir, { recursive: true, force: true });
        await rename(staging, outDir);
        return 'built';
      } finally {
        await lock.close();
        await rm(lockFile, { force: true });
      }
    }
    // another dev mode builds it; a lock left by a killed one is taken over after a while
    if (Date.now() - (await mtimeMs(lockFile)) > LOCK_STALE_MS) await rm(lockFile, { force: true });
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
