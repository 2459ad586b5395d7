import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startTinyproxy, type Tinyproxy } from '../support/tinyproxy.js';
import { sleep } from '../support/wait.js';
import { addEndpoint, addEvent, deliveryOf, startFanoutHarness, uniqueSource, type FanoutHarness } from './support/harness.js';

// A forward proxy that is down is the installation's failure, not the endpoint's: through a real
// workflow, the worker as cmd/worker.ts builds it with DELIVERY_PROXY_URL set, Debian's tinyproxy
// and a real receiver. The endpoint has ONE attempt and auto-disables after one failure: a wait
// that spent an attempt would FAIL the delivery and disable the endpoint. Once the proxy is back
// the delivery goes through it (its log), without a restart.

let h: FanoutHarness;
let proxy: Tinyproxy;
let receiver: Receiver;

beforeAll(async () => {
  [proxy, receiver] = await Promise.all([startTinyproxy(), startReceiver([{ status: 200, body: 'ok' }])]);
  h = await startFanoutHarness({ deliveryProxy: { url: proxy.url, noProxy: [], credentials: undefined } });
});

afterAll(async () => {
  await h?.close();
  await Promise.all([proxy?.close(), receiver?.close()]);
});

const proxyFailures = async (reason: string): Promise<number> =>
  (await h.metrics.deliveryProxyFailures.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0;

describe('the forward proxy down: deliveries wait, no attempt spent', () => {
  it('delivers through the proxy (its log names the request)', async () => {
    const source = uniqueSource();
    const endpointId = await addEndpoint(h.repos, { source, url: `${receiver.url}?e=through`, maxAttempts: 1 });
    const eventId = await addEvent(h.repos, { source });
    expect(await h.runFanout(eventId)).toBe('COMPLETED');
    expect(await deliveryOf(h.repos, eventId, endpointId)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    expect(await proxy.requests()).toContainEqual(`POST ${receiver.url}?e=through HTTP/1.1`);
  });

  it('proxy down: the delivery waits with no attempt recorded, and goes through once the proxy is back', async () => {
    const source = uniqueSource();
    const endpointId = await addEndpoint(h.repos, { source, url: `${receiver.url}?e=waited`, maxAttempts: 1, autoDisableAfter: 1 });
    const eventId = await addEvent(h.repos, { source });
    const before = await proxyFailures('unreachable');
    await proxy.stop();
    let result: Promise<string>;
    try {
      await h.start(eventId);
      result = h.client.workflow.getHandle(eventId).result() as Promise<string>;
      // several tries fail on the proxy meanwhile (the test backoff: 50 ms doubling to 500 ms)
      for (let i = 0; i < 100 && (await proxyFailures('unreachable')) < before + 3; i++) await sleep(100);
      expect(await proxyFailures('unreachable')).toBeGreaterThanOrEqual(before + 3);
      const waiting = await deliveryOf(h.repos, eventId, endpointId);
      expect(waiting).toMatchObject({ status: 'PENDING', attempts: 0, lastError: null });
      const endpoint = await h.repos.endpoints.get(endpointId);
      expect(endpoint).toMatchObject({ consecutiveFailures: 0, disabledAt: null });
      expect(receiver.requests.some((r) => r.path.includes('e=waited'))).toBe(false);
    } finally {
      await proxy.start();
    }
    expect(await result).toBe('COMPLETED');
    expect(await deliveryOf(h.repos, eventId, endpointId)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    expect(await proxy.requests()).toContainEqual(`POST ${receiver.url}?e=waited HTTP/1.1`);
  });

  it('spec.proxy Direct: delivered while the proxy is down', async () => {
    const source = uniqueSource();
    const endpointId = await addEndpoint(h.repos, { source, url: `${receiver.url}?e=direct`, maxAttempts: 1, proxyDirect: true });
    const eventId = await addEvent(h.repos, { source });
    await proxy.stop();
    try {
      expect(await h.runFanout(eventId)).toBe('COMPLETED');
    } finally {
      await proxy.start();
    }
    expect(await deliveryOf(h.repos, eventId, endpointId)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    expect((await proxy.requests()).some((l) => l.includes('e=direct'))).toBe(false);
  });
});
