import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { msToTs } from '@temporalio/common/lib/time.js';
import { connectTemporalClient } from '../../src/temporal/connection.js';
import { connectTemporalNative } from '../../src/temporal/native-connection.js';
import type { TemporalTls } from '../../src/config/tls.js';
import { startTemporalServer, type TemporalServer } from '../../src/dev/temporal-server.js';
import { createTestPki, type TestPki } from '../support/certs.js';
import { basic, http } from '../support/http.js';
import {
  endpointSpec,
  readyz,
  SOURCE,
  startCli,
  startProcessWorld,
  stopCli,
  waitReady,
  type ProcessWorld,
  type RunningCli,
} from '../support/process-stack.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { eventually } from '../support/wait.js';
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('temporal');

/**
 * The real Temporal server (go.temporal.io/server, scripts/tools/go-builds.sh) with TLS on its
 * frontend and client authentication required, certificates from a CA made here; the consumer,
 * the worker and ingest as processes configured by TEMPORAL_TLS_* alone.
 */
let pki: TestPki;
let other: TestPki;
let server: TemporalServer;
let client: { cert: string; key: string };
let good: TemporalTls;

beforeAll(async () => {
  pki = createTestPki('temporal');
  other = createTestPki('other');
  // the frontend's certificate names temporal.test only: the processes need TEMPORAL_TLS_SERVER_NAME
  const frontend = pki.issue('frontend', { dnsNames: ['temporal.test'], usage: 'server' });
  client = pki.issue('webhook-fanout', { usage: 'client' });
  server = await startTemporalServer({
    tls: { certFile: frontend.cert, keyFile: frontend.key, clientCaFile: pki.caCert, requireClientAuth: true },
  });
  good = { caFile: pki.caCert, certFile: client.cert, keyFile: client.key, serverName: 'temporal.test', apiKey: undefined };
  const c = await connectTemporalClient({ address: server.address, tls: good });
  await c.workflowService.registerNamespace({ namespace: 'default', workflowExecutionRetentionPeriod: msToTs('1 day') });
  await c.close();
}, 180_000);

afterAll(async () => {
  await server?.stop();
});

describe('connections to a TLS-only Temporal with client authentication', () => {
  const otherClient = () => other.issue('stranger', { usage: 'client' });
  it.each([
    {
      name: 'a CA that did not sign the frontend',
      tls: () => ({ ...good, caFile: other.caCert }),
      named: /does not chain to TEMPORAL_TLS_CA/,
    },
    {
      name: 'no client certificate',
      tls: () => ({ ...good, certFile: undefined, keyFile: undefined }),
      named: /requires a client certificate: set TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY/,
    },
    {
      name: 'a client certificate from another CA',
      tls: () => ({ ...good, certFile: otherClient().cert, keyFile: `${other.dir}/stranger.key` }),
      named: /does not accept the client certificate/,
    },
    {
      name: 'no server name (the certificate does not name 127.0.0.1)',
      tls: () => ({ ...good, serverName: undefined }),
      named: /set TEMPORAL_TLS_SERVER_NAME/,
    },
  ])('are refused with $name, naming the problem (client and worker connections)', async ({ tls, named }) => {
    const t = { address: server.address, tls: tls() };
    await expect(connectTemporalClient(t, { connectTimeout: 3_000 })).rejects.toThrow(named);
    await expect(connectTemporalNative(t)).rejects.toThrow(named);
  });

  it('succeed with the CA, the client certificate and the server name', async () => {
    const c = await connectTemporalClient({ address: server.address, tls: good });
    const info = await c.workflowService.describeNamespace({ namespace: 'default' });
    expect(info.namespaceInfo?.name).toBe('default');
    await c.close();
    const n = await connectTemporalNative({ address: server.address, tls: good });
    await n.close();
  });
});

describe('ingest, consumer and worker processes on the TLS-only Temporal', () => {
  let world: ProcessWorld;
  let receiver: Receiver;
  const running: RunningCli[] = [];
  let tlsEnv: Record<string, string>;

  beforeAll(async () => {
    world = await startProcessWorld();
    receiver = await startReceiver();
    await world.repos.endpoints.upsertByResourceUid('tls-e1', endpointSpec('tls-receiver', `${receiver.url}/hook`));
    tlsEnv = {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TLS_CA: pki.caCert,
      TEMPORAL_TLS_CERT: client.cert,
      TEMPORAL_TLS_KEY: client.key,
      TEMPORAL_TLS_SERVER_NAME: 'temporal.test',
      TEMPORAL_TASK_QUEUE: 'tls-test',
    };
  }, 120_000);

  afterAll(async () => {
    await Promise.all(running.map((p) => stopCli(p)));
    await receiver?.close();
    await world?.close();
  });

  it('deliver an event end to end over mTLS', async () => {
    const procs = await Promise.all((['worker', 'consumer', 'ingest'] as const).map((c) => startCli(c, { ...world.env, ...tlsEnv })));
    running.push(...procs);
    await Promise.all(procs.map((p) => waitReady(p)));
    const ingest = procs[2]!;
    const res = await http(`http://127.0.0.1:${ingest.port}/api/webhooks/${SOURCE.source}`, {
      method: 'POST',
      headers: { authorization: basic(SOURCE.username, SOURCE.password), 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'tls-1', type: 'order.created' }),
    });
    expect(res.status).toBe(200);
    const { eventId } = res.json() as { eventId: string };
    await eventually(async () => (await world.repos.events.get(eventId))?.status === 'COMPLETED', 120_000);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]?.headers['x-webhook-event-id']).toBe(eventId);
    // three processes start from source (tsx) on a shared machine: generous
  }, 240_000);

  it('a worker without its client certificate waits, not ready, and logs what is missing', async () => {
    const { TEMPORAL_TLS_CERT: _c, TEMPORAL_TLS_KEY: _k, ...noCert } = tlsEnv;
    const worker = await startCli('worker', { ...world.env, ...noCert });
    running.push(worker);
    await eventually(async () => worker.output.join('').includes('requires a client certificate'), 60_000);
    expect(await readyz(worker)).toBe(503);
    expect(worker.child.exitCode).toBeNull();
    const line =
      worker.output
        .join('')
        .split('\n')
        .find((l) => l.includes('requires a client certificate')) ?? '';
    expect(JSON.parse(line)).toMatchObject({ level: 40, dependency: 'temporal', msg: 'temporal unreachable; retrying' });
  }, 120_000);
});
