import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../observability/logger.js';

/**
 * Dev mode serves the console as production does, from dist/console. From a fresh checkout (or
 * after the app's sources changed) that folder is missing or stale, so dev mode builds it first,
 * with `npm run build`'s own Vite step (scripts/console/build.ts). Several dev modes starting at
 * once (tests) build it once: the first takes a lock, the others wait and find it fresh.
 */

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
        const { buildConsole } = await import('../../scripts/console/build.js');
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
