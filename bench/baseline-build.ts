import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// A build of an older commit, side by side with the current one: a git worktree of it under
// .data/bench/ (gitignored), installed (npm ci) and built (npm run build) once and kept, keyed by
// the commit. The bench spawns its compiled CLI as it spawns ours; the old build migrates and
// seeds a database of its own with its own code, so a schema or seeding change since then does
// not mix the two.

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BUILT_MARK = '.bench-built';

export interface BaselineBuild {
  sha: string;
  dir: string;
  /** its compiled CLI (package.json "bin" of that commit) */
  cli: string;
}

function run(cmd: string, args: string[], cwd: string, log: (line: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    log(`${path.relative(ROOT, cwd) || '.'}: ${cmd} ${args.join(' ')}`);
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolve(Buffer.concat(out).toString('utf8').trim())
        : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}: ${Buffer.concat(err).toString('utf8').slice(-2000)}`)),
    );
  });
}

/** The commit's build, made the first time (a few minutes: npm ci and the build), reused after. */
export async function baselineBuild(ref: string, log: (line: string) => void): Promise<BaselineBuild> {
  const sha = await run('git', ['rev-parse', '--verify', `${ref}^{commit}`], ROOT, log);
  const dir = path.join(ROOT, '.data/bench', `baseline-${sha.slice(0, 12)}`);
  if (!existsSync(path.join(dir, BUILT_MARK))) {
    await mkdir(path.dirname(dir), { recursive: true });
    if (!existsSync(path.join(dir, 'package.json'))) await run('git', ['worktree', 'add', '--force', '--detach', dir, sha], ROOT, log);
    await run('npm', ['ci', '--no-audit', '--no-fund'], dir, log);
    await run('npm', ['run', 'build'], dir, log);
    writeFileSync(path.join(dir, BUILT_MARK), `${sha}\n`);
  }
  const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  return { sha, dir, cli: path.join(dir, Object.values(pkg.bin)[0] ?? 'dist/cmd/cli.js') };
}

/** What the seed script below runs in the old tree, with that tree's own modules. */
const SEED_SCRIPT = `// written by the current tree's bench/baseline-build.ts: the old build's own migrations and seeding
import { createDb } from './src/db/knex.js';
import { migrateLatest } from './src/db/migrate.js';
import { seedEndpoints } from './bench/e2e-fixtures.js';
import { seedCredential } from './bench/ingest-bench.js';
const [url, source, receiverUrl] = process.argv.slice(2);
const db = createDb({ url, poolMax: 2 });
await migrateLatest(db);
await seedCredential({ db } as never, source);
await seedEndpoints({ db } as never, source, 1, receiverUrl);
await db.destroy();
`;

/**
 * Migrates and seeds the baseline's own database (a fresh one the caller created) with the old
 * tree's code: the source's credential (the same Basic credential as the current bench's) and one
 * endpoint at the receiver.
 */
export async function seedBaselineDatabase(
  build: BaselineBuild,
  opts: { url: string; source: string; receiverUrl: string },
  log: (line: string) => void,
): Promise<void> {
  const script = path.join(build.dir, 'bench-baseline-seed.ts');
  writeFileSync(script, SEED_SCRIPT);
  await run(process.execPath, ['--import', 'tsx', script, opts.url, opts.source, opts.receiverUrl], build.dir, log);
}
