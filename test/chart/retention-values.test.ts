import { describe, expect, it } from 'vitest';
import { helmTemplate, helmTemplateError, parseManifests } from './support/chart.js';
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('chart-tools');

// retention.maxAge / retention.payloadMaxAge / retention.settledGrace: what reaches ingest's environment, and what the
// chart refuses at install time instead of a pod that refuses to start.

type Container = { env?: Array<{ name: string; value?: string }> };
async function ingestEnv(set: string[]): Promise<Record<string, string | undefined>> {
  const objs = parseManifests(await helmTemplate({ set }));
  const ingest = objs.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-ingest'));
  const containers = (ingest as unknown as { spec: { template: { spec: { containers: Container[] } } } }).spec.template.spec.containers;
  return Object.fromEntries((containers[0]?.env ?? []).map((e) => [e.name, e.value]));
}

describe('chart: retention values', () => {
  it("off by default: no RETENTION_* in ingest's environment", async () => {
    const env = await ingestEnv([]);
    expect(Object.keys(env).filter((k) => k.startsWith('RETENTION_'))).toEqual([]);
  });

  it('maxAge, payloadMaxAge and the pace reach ingest', async () => {
    const env = await ingestEnv(['retention.maxAge=90d', 'retention.payloadMaxAge=36h', 'ingest.settings.RETENTION_BATCH_SIZE=200']);
    expect(env).toMatchObject({ RETENTION_MAX_AGE: '90d', RETENTION_PAYLOAD_MAX_AGE: '36h', RETENTION_BATCH_SIZE: '200' });
    expect(env.RETENTION_SETTLED_GRACE).toBeUndefined();
  });

  it('settledGrace reaches ingest as RETENTION_SETTLED_GRACE', async () => {
    const env = await ingestEnv(['retention.maxAge=45s', 'retention.payloadMaxAge=10s', 'retention.settledGrace=5s']);
    expect(env).toMatchObject({ RETENTION_MAX_AGE: '45s', RETENTION_PAYLOAD_MAX_AGE: '10s', RETENTION_SETTLED_GRACE: '5s' });
  });

  it.each([
    { set: ['retention.maxAge=3months'], message: /retention\/maxAge.*does not match pattern/ },
    { set: ['retention.payloadMaxAge=0d'], message: /retention\/payloadMaxAge.*does not match pattern/ },
    { set: ['retention.settledGrace=15 minutes'], message: /retention\/settledGrace.*does not match pattern/ },
    {
      set: ['retention.maxAge=7d', 'retention.payloadMaxAge=168h'],
      message: /retention.payloadMaxAge \(168h\) must be shorter than retention.maxAge \(7d\)/,
    },
    {
      set: ['retention.maxAge=36h', 'retention.payloadMaxAge=2d'],
      message: /retention.payloadMaxAge \(2d\) must be shorter than retention.maxAge \(36h\)/,
    },
    { set: ['ingest.settings.RETENTION_BATCH_SIZE=0'], message: /RETENTION_BATCH_SIZE/ },
  ])('refuses $set with a message naming it', async ({ set, message }) => {
    expect(await helmTemplateError({ set })).toMatch(message);
  });
});
