import { execSync } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMode, type DevMode } from '../support/dev-mode.js';
import { basic, http } from '../support/http.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { eventually, sleep } from '../support/wait.js';

const manifests = (receiverUrl: string) => `
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: dev-pass}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: acme}
spec: {source: acme, username: acme, passwordSecretRef: {name: creds, key: password}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: sink}
spec: {source: acme, url: "${receiverUrl}/sink"}
`;

/**
 * `npm start` stopped as a terminal stops it: Ctrl-C sends SIGINT to the whole foreground process
 * group, npm, dev mode and the embedded Postgres and Temporal dev server alike, so those may end
 * before dev mode stops them. Nothing may be left running, and the folders must start again.
 */
describe('npm start and Ctrl-C in a terminal (SIGINT to its process group)', () => {
  let dir: string;
  let receiver: Receiver;
  let dev: DevMode | undefined;
  const start = (until?: string) =>
    startDevMode({
      configDir: dir,
      dataDir: path.join(dir, 'data'),
      npmStart: true,
      env: { LOG_LEVEL: 'info' },
      timeoutMs: 120_000,
      ...(until ? { until } : {}),
    });
  // what it started, found by the folder in their command lines (Postgres's data, Temporal's database)
  const leftovers = (): string => execSync(`ps -eo args | grep -F '${dir}' | grep -v grep || true`).toString().trim();

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'wf-dev-ctrl-c-'));
    // mkdtemp makes it 0700; as root, embedded Postgres runs as the "postgres" user and must reach it
    await chmod(dir, 0o755);
    receiver = await startReceiver();
    await writeFile(path.join(dir, 'manifests.yaml'), manifests(receiver.url));
  });

  afterAll(async () => {
    await dev?.stop(1_000);
    await receiver?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('Ctrl-C while it starts (building the workflow code): it stops what it started, in order', async () => {
    // its dependencies run by then; the bundling keeps its event loop busy for seconds: half a
    // second into it, the tsx CLI's supervisor (npm start's runner before) SIGKILLed dev mode,
    // its signal not acknowledged within 60 ms, so nothing was stopped in order
    dev = await start('workflow code: bundling');
    await sleep(500);
    await dev.stop(30_000);
    // dev mode's own last line (npm, itself interrupted, ends by the signal as in a terminal)
    expect(dev.output()).toContain('webhook-fanout dev: stopped');
    await eventually(async () => leftovers() === '', { timeoutMs: 10_000, what: 'nothing it started left running' });
  }, 180_000);

  it('started again on the same folders, it delivers; Ctrl-C then stops everything within 30 s', async () => {
    dev = await start();
    const res = await http(`${dev.url}/api/webhooks/acme`, {
      headers: { authorization: basic('acme', 'dev-pass'), 'content-type': 'application/json' },
      body: '{"id":"ctrl-c-1","type":"any.type"}',
    });
    expect(res.status).toBe(200);
    await eventually(async () => receiver.requests.length >= 1, 30_000);
    const stopping = Date.now();
    await dev.stop(30_000);
    expect(Date.now() - stopping).toBeLessThan(30_000);
    expect(dev.output()).toContain('webhook-fanout dev: stopped');
    expect(dev.output()).not.toContain('shutdown took longer');
    await eventually(async () => leftovers() === '', { timeoutMs: 10_000, what: 'nothing it started left running' });
  }, 180_000);
});
