import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveWorkflowCode, WORKFLOW_BUNDLES } from '../../src/processes/fanout-worker.js';

const run = promisify(execFile);

/**
 * Every workflow run evaluates its bundle's modules anew, so what a bundle carries is paid per
 * event: the bundle of a worker without tracing must not carry Temporal's OpenTelemetry
 * interceptors (half the code; figures: docs/benchmarks.md).
 */
describe('the prebuilt workflow bundles (npm run build)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'bundles-'));
    await run(process.execPath, ['--import', 'tsx', 'scripts/bundle-workflows.ts', dir], { timeout: 120_000 });
  }, 150_000);
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('the plain bundle has the workflow and no OpenTelemetry code; the traced one has both', async () => {
    const plain = await readFile(path.join(dir, WORKFLOW_BUNDLES.plain), 'utf8');
    const traced = await readFile(path.join(dir, WORKFLOW_BUNDLES.traced), 'utf8');
    for (const bundle of [plain, traced]) expect(bundle).toContain('WebhookFanoutWorkflow');
    // webpack names each module by its path (the SDK's own comments mention the package: not those)
    expect(plain).not.toMatch(/node_modules\/(@opentelemetry|@temporalio\/interceptors-opentelemetry)\//);
    expect(traced).toMatch(/node_modules\/@temporalio\/interceptors-opentelemetry\//);
    expect(traced).toMatch(/node_modules\/@opentelemetry\/api\//);
    expect(plain.length).toBeLessThan(traced.length * 0.6);
  });

  it('a worker takes the traced code only when it traces (from a checkout: the sources, with the interceptor module then)', () => {
    // no dist/ beside src/processes in a checkout: the worker bundles the sources itself
    expect(resolveWorkflowCode(false)).toMatchObject({ kind: 'source', traced: false });
    expect(resolveWorkflowCode(true)).toMatchObject({ kind: 'source', traced: true });
  });
});
