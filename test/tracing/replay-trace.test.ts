import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startIdentityProvider, type IdentityProvider } from '../../src/dev/identity-provider.js';
import { OTLP_SPAN_KIND, randomHex, startCollector, type CollectedSpan, type Collector } from '../support/otel-collector.js';
import { basic, http } from '../support/http.js';
import {
  endpointSpec,
  SOURCE,
  startCli,
  startProcessWorld,
  stopCli,
  waitReady,
  type ProcessWorld,
  type RunningCli,
} from '../support/process-stack.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { eventually, sleep } from '../support/wait.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('otelcol');

/**
 * A replay through the admin API, and the sweeper's re-publish of an event whose publish failed,
 * join the event's stored trace (webhook_event.traceparent): ingest (with the admin API and the
 * sweeper), the consumer and the worker as separate processes exporting to a real OpenTelemetry
 * Collector, the admin API's tokens from the project's own identity provider over HTTP.
 */
const { SERVER, CLIENT, PRODUCER, CONSUMER } = OTLP_SPAN_KIND;
const AUDIENCE = 'https://webhook-fanout.test/api';
const OPERATOR = { clientId: 'operator', clientSecret: 'operator-secret', permissions: ['read:webhooks', 'replay:webhooks'] };

let collector: Collector;
let world: ProcessWorld;
let idp: IdentityProvider;
let topicProxy: TcpProxy;
let receiver: Receiver;
const running: RunningCli[] = [];
let ingestUrl: string;

beforeAll(async () => {
  [collector, world, idp] = await Promise.all([
    startCollector(),
    startProcessWorld(),
    startIdentityProvider({ audience: AUDIENCE, clients: [OPERATOR] }),
  ]);
  receiver = await startReceiver();
  await world.repos.endpoints.upsertByResourceUid('replay-trace', endpointSpec('replayed', `${receiver.url}/hook`));
  // ingest reaches SNS through a proxy the test cuts, so a publish fails as in an outage
  const aws = new URL(world.env.AWS_ENDPOINT_URL!);
  topicProxy = await startTcpProxy({ host: aws.hostname, port: Number(aws.port) });
  const common = {
    ...world.env,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `replay-trace-${randomHex(4)}`,
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_BSP_SCHEDULE_DELAY: '200',
  };
  const [ingest, consumer, worker] = await Promise.all([
    startCli('ingest', {
      ...common,
      AWS_ENDPOINT_URL: `http://127.0.0.1:${topicProxy.port}`,
      ADMIN_API_ENABLED: 'true',
      CONSOLE_ENABLED: 'false',
      AUTH_URL: idp.url,
      AUTH_AUDIENCE: AUDIENCE,
      SWEEP_INTERVAL_SECONDS: '1',
      SWEEP_MIN_AGE_SECONDS: '0',
    }),
    startCli('consumer', common),
    startCli('worker', common),
  ]);
  running.push(ingest!, consumer!, worker!);
  await Promise.all(running.map((p) => waitReady(p)));
  ingestUrl = `http://127.0.0.1:${ingest!.port}`;
}, 180_000);

afterAll(async () => {
  await Promise.all(running.map((p) => stopCli(p)));
  await receiver?.close();
  await topicProxy?.close();
  await idp?.close();
  await world?.close();
  await collector?.stop();
});

const send = (id: string, traceparent: string) =>
  http(`${ingestUrl}/api/webhooks/${SOURCE.source}`, {
    headers: { authorization: basic(SOURCE.username, SOURCE.password), 'content-type': 'application/json', traceparent },
    body: JSON.stringify({ id, type: 'order.created' }),
  });

async function operatorToken(): Promise<string> {
  const token = await http(`${idp.url}/oauth/token`, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_id: OPERATOR.clientId,
      client_secret: OPERATOR.clientSecret,
      audience: AUDIENCE,
      grant_type: 'client_credentials',
    }),
  });
  expect(token.status).toBe(200);
  return (token.json() as { access_token: string }).access_token;
}

async function replay(eventId: string): Promise<{ workflowId: string }> {
  const res = await http(`${ingestUrl}/api/events/${eventId}/replay`, { headers: { authorization: `Bearer ${await operatorToken()}` } });
  expect(res.status, res.text).toBe(202);
  return res.json() as { workflowId: string };
}

/** Sends an event (the receiver refuses it for good: its delivery FAILS) and waits until it FAILED. */
async function failedEvent(traceparent: string): Promise<string> {
  const res = await send(`replay-${randomHex(4)}`, traceparent);
  expect(res.status).toBe(200);
  const { eventId } = res.json() as { eventId: string };
  await eventually(async () => (await world.repos.events.get(eventId))?.status === 'FAILED', 90_000);
  return eventId;
}

const ofTrace = (traceId: string): CollectedSpan[] => collector.spans.filter((s) => s.traceId === traceId);
const named = (spans: CollectedSpan[], name: string): CollectedSpan[] => spans.filter((s) => s.name === name);
const byIdIn = (spans: CollectedSpan[]) => new Map(spans.map((s) => [s.spanId, s]));

/** the chain of parents of a span, nearest first, as far as the trace has them */
function ancestors(span: CollectedSpan, spans: CollectedSpan[]): CollectedSpan[] {
  const byId = byIdIn(spans);
  const out: CollectedSpan[] = [];
  for (let p = byId.get(span.parentSpanId); p; p = byId.get(p.parentSpanId)) out.push(p);
  return out;
}

describe("a replay through the admin API joins the event's stored trace", () => {
  const senderTrace = randomHex(16);
  let eventId: string;
  let started: { workflowId: string };
  let spans: CollectedSpan[];

  beforeAll(async () => {
    let letThrough = false;
    // 400: not retried, the delivery FAILED, until the replay
    receiver.setScript(() => ({ status: letThrough ? 200 : 400 }));
    eventId = await failedEvent(`00-${senderTrace}-${randomHex(8)}-01`);
    // the first run's spans are in before the replay
    await eventually(async () => named(ofTrace(senderTrace), 'RunActivity:finishEvent').length === 1, 60_000);
    letThrough = true;
    started = await replay(eventId);
    await eventually(async () => (await world.repos.events.get(eventId))?.status === 'COMPLETED', 90_000);
    spans = await eventually(async () => {
      const got = ofTrace(senderTrace);
      return named(got, 'RunActivity:finishEvent').length === 2 && named(got, 'POST').length === 2 ? got : undefined;
    }, 60_000);
    await sleep(1_000);
    spans = ofTrace(senderTrace);
  }, 240_000);

  it("starts the replay's run in a span of the event's trace, under the request that brought the event, linked to the admin request", () => {
    const inbound = spans.find((s) => s.kind === SERVER && s.name === 'POST /api/webhooks/{source}');
    const replays = named(spans, 'replay event');
    expect(replays).toHaveLength(1);
    const replaySpan = replays[0]!;
    expect(replaySpan).toMatchObject({
      service: 'webhook-fanout-ingest',
      kind: PRODUCER,
      parentSpanId: inbound?.spanId,
      attributes: expect.objectContaining({ 'webhook.event_id': eventId, 'webhook.workflow_id': started.workflowId }),
    });
    // the admin request is a trace of its own; the replay span links to it
    const admin = collector.spans.find((s) => s.name === 'POST /api/events/{id}/replay');
    expect(admin).toMatchObject({
      kind: SERVER,
      service: 'webhook-fanout-ingest',
      attributes: expect.objectContaining({ 'http.route': '/api/events/{id}/replay' }),
    });
    expect(admin?.traceId).not.toBe(senderTrace);
    expect(replaySpan.links).toEqual([{ traceId: admin?.traceId, spanId: admin?.spanId }]);
  });

  it("has the replay's workflow start, run, activities and attempt under it, and the receiver's traceparent in the event's trace", () => {
    const replaySpan = named(spans, 'replay event')[0]!;
    const startSpans = named(spans, 'StartWorkflow:WebhookFanoutWorkflow');
    // the first run's start by the consumer, the replay's by ingest (the admin API)
    expect(startSpans.map((s) => s.service).sort()).toEqual(['webhook-fanout-consumer', 'webhook-fanout-ingest']);
    const replayStart = startSpans.find((s) => s.service === 'webhook-fanout-ingest')!;
    expect(replayStart.parentSpanId).toBe(replaySpan.spanId);
    const replayRun = named(spans, 'RunWorkflow:WebhookFanoutWorkflow').find((s) => s.parentSpanId === replayStart.spanId);
    expect(replayRun?.service).toBe('webhook-fanout-worker');
    // every span of the trace has its parent in it (the inbound span's is the sender's)
    const byId = byIdIn(spans);
    for (const s of spans) if (s.kind !== SERVER) expect(byId.has(s.parentSpanId), `${s.service} ${s.name}`).toBe(true);

    const attempts = named(spans, 'POST').filter((s) => s.kind === CLIENT);
    const replayed = attempts.find((s) => s.attributes['http.response.status_code'] === 200)!;
    const first = attempts.find((s) => s.attributes['http.response.status_code'] === 400)!;
    expect(replayed.attributes).toMatchObject({ 'webhook.outcome': 'success', 'webhook.event_id': eventId });
    expect(first.attributes).toMatchObject({ 'webhook.outcome': 'permanent' });
    const chain = ancestors(replayed, spans).map((s) => s.name);
    expect(chain).toEqual(
      expect.arrayContaining(['RunActivity:deliver', 'RunWorkflow:WebhookFanoutWorkflow', 'replay event', 'POST /api/webhooks/{source}']),
    );
    expect(ancestors(replayed, spans)).toContain(replayRun);
    expect(ancestors(first, spans).map((s) => s.name)).not.toContain('replay event');
    for (const name of ['prepare', 'deliver', 'finishEvent']) {
      expect(
        named(spans, `RunActivity:${name}`).filter((s) => ancestors(s, spans).includes(replayRun!)),
        name,
      ).toHaveLength(1);
    }

    const mine = receiver.requests.filter((r) => r.headers['x-webhook-event-id'] === eventId);
    expect(mine).toHaveLength(2);
    const [, traceId, parentId, flags] = String(mine[1]?.headers.traceparent).split('-');
    expect({ traceId, parentId, flags }).toEqual({ traceId: senderTrace, parentId: replayed.spanId, flags: '01' });
  });
});

describe('a bulk replay', () => {
  it("replays each event in its own event's trace, every replay span linked to the one admin request", async () => {
    let letThrough = false;
    receiver.setScript(() => ({ status: letThrough ? 200 : 400 }));
    const traces = [randomHex(16), randomHex(16)];
    const eventIds = [];
    for (const t of traces) eventIds.push(await failedEvent(`00-${t}-${randomHex(8)}-01`));
    letThrough = true;
    const res = await http(`${ingestUrl}/api/deliveries/replay`, {
      headers: { authorization: `Bearer ${await operatorToken()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ source: SOURCE.source, limit: 10 }),
    });
    expect(res.status, res.text).toBe(202);
    expect(res.json()).toMatchObject({ replayed: 2, failed: [] });
    for (const id of eventIds) await eventually(async () => (await world.repos.events.get(id))?.status === 'COMPLETED', 90_000);
    const admin = await eventually(async () => collector.spans.find((s) => s.name === 'POST /api/deliveries/replay'), 30_000);
    expect(admin.kind).toBe(SERVER);
    for (const [i, traceId] of traces.entries()) {
      const spans = await eventually(async () => {
        const got = ofTrace(traceId);
        if (named(got, 'RunActivity:finishEvent').length !== 2 || named(got, 'POST').length !== 2) return undefined;
        // a parent span is exported when it ends, after its children: on a loaded machine the
        // workflow's spans came in after the last POST, so wait (bounded) for the replayed one's chain
        const ok = named(got, 'POST').find((s) => s.attributes['http.response.status_code'] === 200);
        return ok && ancestors(ok, got).some((s) => s.name === 'POST /api/webhooks/{source}') ? got : undefined;
      }, 60_000).catch(() => ofTrace(traceId));
      const inbound = spans.find((s) => s.name === 'POST /api/webhooks/{source}');
      expect(named(spans, 'replay event')).toMatchObject([
        {
          parentSpanId: inbound?.spanId,
          attributes: expect.objectContaining({ 'webhook.event_id': eventIds[i] }),
          links: [{ traceId: admin.traceId, spanId: admin.spanId }],
        },
      ]);
      const replayed = named(spans, 'POST').find((s) => s.attributes['http.response.status_code'] === 200)!;
      expect(ancestors(replayed, spans).map((s) => s.name)).toContain('replay event');
    }
  }, 240_000);
});

describe('a replay of an event with no stored trace', () => {
  it("starts a fresh trace: the admin request's, with the replay's run and attempt in it", async () => {
    const unsampled = randomHex(16);
    let letThrough = false;
    receiver.setScript(() => ({ status: letThrough ? 200 : 400 }));
    // sampled out at ingest: the event is stored without a traceparent, as with tracing off
    const eventId = await failedEvent(`00-${unsampled}-${randomHex(8)}-00`);
    expect((await world.repos.events.get(eventId))?.traceparent).toBeNull();
    letThrough = true;
    await replay(eventId);
    await eventually(async () => (await world.repos.events.get(eventId))?.status === 'COMPLETED', 90_000);
    const replaySpan = await eventually(
      async () => collector.spans.find((s) => s.name === 'replay event' && s.attributes['webhook.event_id'] === eventId),
      30_000,
    );
    expect(replaySpan.traceId).not.toBe(unsampled);
    expect(replaySpan.links).toEqual([]);
    const spans = await eventually(async () => {
      const got = ofTrace(replaySpan.traceId);
      return named(got, 'RunActivity:finishEvent').length === 1 && named(got, 'POST').length === 1 ? got : undefined;
    }, 60_000);
    const admin = spans.find((s) => s.name === 'POST /api/events/{id}/replay');
    expect(admin?.kind).toBe(SERVER);
    expect(replaySpan.parentSpanId).toBe(admin?.spanId);
    expect(ofTrace(unsampled)).toEqual([]);
    const replayed = receiver.requests.filter((r) => r.headers['x-webhook-event-id'] === eventId);
    expect(replayed).toHaveLength(2);
    expect(String(replayed[0]?.headers.traceparent)).toMatch(new RegExp(`^00-${unsampled}-[0-9a-f]{16}-00$`));
    expect(String(replayed[1]?.headers.traceparent)).toBe(`00-${replaySpan.traceId}-${named(spans, 'POST')[0]?.spanId}-01`);
  }, 240_000);
});

describe("the sweeper's re-publish of an event whose publish failed", () => {
  it("joins the event's stored trace: the consumer, the workflow and the attempt continue it", async () => {
    receiver.setScript([{ status: 200 }]);
    const senderTrace = randomHex(16);
    topicProxy.cut();
    const res = await send(`swept-${randomHex(4)}`, `00-${senderTrace}-${randomHex(8)}-01`);
    topicProxy.restore();
    expect(res.status).toBe(503);
    const stored = await world.t.db('webhook_event').where('traceparent', 'like', `00-${senderTrace}-%`).first();
    expect(stored).toBeDefined();
    const eventId = (stored as { id: string }).id;
    // nobody retries: the sweeper (every second here) publishes it
    await eventually(async () => (await world.repos.events.get(eventId))?.status === 'COMPLETED', 120_000);
    const spans = await eventually(async () => {
      const got = ofTrace(senderTrace);
      return named(got, 'RunActivity:finishEvent').length === 1 && named(got, 'POST').length === 1 ? got : undefined;
    }, 60_000);
    await sleep(1_000);
    const all = ofTrace(senderTrace);

    const inbound = all.find((s) => s.name === 'POST /api/webhooks/{source}')!;
    // answered 503: the request's span failed, and so did its publish
    expect(inbound.status.code).toBe(2);
    expect(named(all, 'publish event')).toMatchObject([{ parentSpanId: inbound.spanId, status: { code: 2 } }]);
    const consumed = named(all, 'process event');
    expect(consumed).toHaveLength(1);
    const republish = all.find((s) => s.spanId === consumed[0]!.parentSpanId);
    expect(republish).toMatchObject({
      name: 'republish event',
      service: 'webhook-fanout-ingest',
      kind: PRODUCER,
      parentSpanId: inbound.spanId,
      attributes: expect.objectContaining({ 'webhook.event_id': eventId, 'webhook.republished_by': 'sweeper' }),
    });
    expect(consumed[0]!.kind).toBe(CONSUMER);
    const attempt = named(spans, 'POST')[0]!;
    expect(ancestors(attempt, all).map((s) => s.name)).toEqual(
      expect.arrayContaining([
        'RunWorkflow:WebhookFanoutWorkflow',
        'StartWorkflow:WebhookFanoutWorkflow',
        'process event',
        'republish event',
      ]),
    );
    const got = receiver.requests.find((r) => r.headers['x-webhook-event-id'] === eventId);
    expect(String(got?.headers.traceparent)).toBe(`00-${senderTrace}-${attempt.spanId}-01`);
  }, 240_000);
});
