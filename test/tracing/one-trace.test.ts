import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { eventDetailView } from '../../src/api/views.js';
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
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('otelcol');

/**
 * One event through ingest, consumer and worker as separate processes, each exporting its spans
 * with OpenTelemetry's SDK to a real OTLP receiver (the OpenTelemetry Collector, built from its Go
 * modules), each over another of the three protocols the SDK's variables choose.
 */
const { SERVER, CLIENT, PRODUCER, CONSUMER } = OTLP_SPAN_KIND;

let collector: Collector;
let world: ProcessWorld;
let flaky: Receiver;
let quiet: Receiver;
const running: RunningCli[] = [];
let ingestUrl: string;

beforeAll(async () => {
  collector = await startCollector();
  world = await startProcessWorld();
  // the first attempt fails, the retry succeeds: both attempts must join the event's trace
  flaky = await startReceiver([{ status: 503 }, { status: 200 }]);
  quiet = await startReceiver();
  await world.repos.endpoints.upsertByResourceUid('trace-flaky', endpointSpec('traced-flaky', `${flaky.url}/hook`));
  await world.repos.endpoints.upsertByResourceUid(
    'trace-quiet',
    endpointSpec('untraced', `${quiet.url}/hook`, { propagateTraceContext: false }),
  );
  const common = {
    ...world.env,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `tracing-${randomHex(4)}`,
    // export quickly, so the test does not wait for the default 5 s batches
    OTEL_BSP_SCHEDULE_DELAY: '200',
  };
  const [ingest, consumer, worker] = await Promise.all([
    startCli('ingest', { ...common, OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }),
    startCli('consumer', { ...common, OTEL_EXPORTER_OTLP_ENDPOINT: collector.grpcEndpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    startCli('worker', { ...common, OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }),
  ]);
  running.push(ingest!, consumer!, worker!);
  await Promise.all(running.map((p) => waitReady(p)));
  ingestUrl = `http://127.0.0.1:${ingest!.port}`;
}, 180_000);

afterAll(async () => {
  await Promise.all(running.map((p) => stopCli(p)));
  await Promise.all([flaky?.close(), quiet?.close()]);
  await world?.close();
  await collector?.stop();
});

async function send(id: string, traceparent: string): Promise<string> {
  const res = await http(`${ingestUrl}/api/webhooks/${SOURCE.source}`, {
    headers: { authorization: basic(SOURCE.username, SOURCE.password), 'content-type': 'application/json', traceparent },
    body: JSON.stringify({ id, type: 'order.created' }),
  });
  expect(res.status).toBe(200);
  return (res.json() as { eventId: string }).eventId;
}

const ofTrace = (traceId: string): CollectedSpan[] => collector.spans.filter((s) => s.traceId === traceId);

describe("one trace from the sender's request to every delivery", () => {
  const senderTrace = randomHex(16);
  const senderSpan = randomHex(8);
  let eventId: string;
  let spans: CollectedSpan[];

  beforeAll(async () => {
    eventId = await send(`traced-${randomHex(4)}`, `00-${senderTrace}-${senderSpan}-01`);
    await eventually(async () => (await world.repos.events.get(eventId))?.status === 'COMPLETED', 90_000);
    // everything that ran has been exported once finishEvent's activity span is in
    spans = await eventually(async () => {
      const got = ofTrace(senderTrace);
      const finished = got.some((s) => s.name === 'RunActivity:finishEvent') && got.filter((s) => s.name === 'POST').length >= 3;
      return finished ? got : undefined;
    }, 60_000);
    // a moment for stragglers of the same batches
    await sleep(1_000);
    spans = ofTrace(senderTrace);
  }, 180_000);

  it("continues the sender's traceparent as the parent of the inbound span (INBOUND_TRACEPARENT=parent)", () => {
    const server = spans.find((s) => s.kind === SERVER);
    expect(server).toMatchObject({
      service: 'webhook-fanout-ingest',
      name: 'POST /api/webhooks/{source}',
      parentSpanId: senderSpan,
      attributes: expect.objectContaining({
        'http.route': '/api/webhooks/{source}',
        'webhook.source': 'shop',
        'webhook.event_id': eventId,
        'http.response.status_code': 200,
        // the sender (ingest trusts no proxy here: the TCP peer), not left out
        'client.address': '127.0.0.1',
      }),
    });
  });

  it('links every span to its parent, across ingest, consumer and worker', () => {
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parentOf = (s: CollectedSpan | undefined): CollectedSpan | undefined => (s ? byId.get(s.parentSpanId) : undefined);
    for (const s of spans) {
      if (s.kind === SERVER) continue; // its parent is the sender's span
      expect(byId.has(s.parentSpanId), `${s.service} ${s.name}: parent ${s.parentSpanId} is in the trace`).toBe(true);
    }
    const one = (name: string, service: string): CollectedSpan => {
      const found = spans.filter((s) => s.name === name && s.service === service);
      expect(found, `${service} ${name}`).toHaveLength(1);
      return found[0]!;
    };
    const server = one('POST /api/webhooks/{source}', 'webhook-fanout-ingest');
    const insert = one('insert event', 'webhook-fanout-ingest');
    const publish = one('publish event', 'webhook-fanout-ingest');
    const process = one('process event', 'webhook-fanout-consumer');
    const start = one('StartWorkflow:WebhookFanoutWorkflow', 'webhook-fanout-consumer');
    const run = one('RunWorkflow:WebhookFanoutWorkflow', 'webhook-fanout-worker');
    expect(insert.parentSpanId).toBe(server.spanId);
    expect(publish).toMatchObject({ parentSpanId: server.spanId, kind: PRODUCER });
    // carried in the SNS/SQS message attributes
    expect(process).toMatchObject({
      parentSpanId: publish.spanId,
      kind: CONSUMER,
      attributes: expect.objectContaining({ 'webhook.event_id': eventId, 'webhook.start': 'started' }),
    });
    expect(start.parentSpanId).toBe(process.spanId);
    // carried in the workflow's start headers
    expect(run.parentSpanId).toBe(start.spanId);
    for (const activity of ['prepare', 'finishEvent']) {
      const runActivity = one(`RunActivity:${activity}`, 'webhook-fanout-worker');
      expect(parentOf(parentOf(runActivity))?.spanId, `RunActivity:${activity} under the workflow`).toBe(run.spanId);
    }
  });

  it('has each delivery attempt as a client span with the endpoint, the attempt, the status and the outcome, the retry in the same trace', () => {
    const attempts = spans
      .filter((s) => s.name === 'POST' && s.kind === CLIENT)
      .map((s) => ({
        endpoint: s.attributes['webhook.endpoint'],
        attempt: s.attributes['webhook.attempt'],
        status: s.attributes['http.response.status_code'],
        outcome: s.attributes['webhook.outcome'],
        error: s.status.code === 2,
      }))
      .sort((a, b) => `${String(a.endpoint)}${String(a.attempt)}`.localeCompare(`${String(b.endpoint)}${String(b.attempt)}`));
    expect(attempts).toEqual([
      { endpoint: 'traced-flaky', attempt: 1, status: 503, outcome: 'retryable', error: true },
      { endpoint: 'traced-flaky', attempt: 2, status: 200, outcome: 'success', error: false },
      { endpoint: 'untraced', attempt: 1, status: 200, outcome: 'success', error: false },
    ]);
    for (const s of spans.filter((x) => x.name === 'POST')) {
      expect(s.service).toBe('webhook-fanout-worker');
      expect(s.attributes).toMatchObject({ 'webhook.event_id': eventId, 'http.request.method': 'POST', 'server.address': '127.0.0.1' });
    }
  });

  it("sends the receiver a traceparent of the attempt's span, unless the endpoint turned it off", () => {
    const attemptSpans = spans.filter((s) => s.name === 'POST' && s.attributes['webhook.endpoint'] === 'traced-flaky');
    expect(flaky.requests).toHaveLength(2);
    flaky.requests.forEach((req, i) => {
      const [, traceId, parentId, flags] = String(req.headers.traceparent).split('-');
      expect(traceId).toBe(senderTrace);
      expect(flags).toBe('01');
      expect(attemptSpans.find((s) => s.spanId === parentId)?.attributes['webhook.attempt']).toBe(i + 1);
    });
    expect(quiet.requests).toHaveLength(1);
    expect(quiet.requests[0]?.headers.traceparent).toBeUndefined();
  });

  it('gives the event view its trace id', async () => {
    const event = await world.repos.events.get(eventId);
    expect(event?.traceparent?.split('-')[1]).toBe(senderTrace);
    expect(eventDetailView(event!, [], { rows: [], total: 0, routed: true }).traceId).toBe(senderTrace);
  });
});

describe('a sampled-out event', () => {
  it('exports no span and stores no trace id, and the receiver still gets the (unsampled) traceparent', async () => {
    const unsampled = randomHex(16);
    flaky.setScript([{ status: 200 }]);
    const eventId = await send(`unsampled-${randomHex(4)}`, `00-${unsampled}-${randomHex(8)}-00`);
    await eventually(async () => (await world.repos.events.get(eventId))?.status === 'COMPLETED', 90_000);
    // a sampled event after it: once its spans are in, the unsampled one's would be too
    const marker = randomHex(16);
    const markerEvent = await send(`marker-${randomHex(4)}`, `00-${marker}-${randomHex(8)}-01`);
    await eventually(async () => (await world.repos.events.get(markerEvent))?.status === 'COMPLETED', 90_000);
    await eventually(async () => ofTrace(marker).some((s) => s.name === 'RunActivity:finishEvent'), 60_000);
    expect(ofTrace(unsampled)).toEqual([]);
    expect((await world.repos.events.get(eventId))?.traceparent).toBeNull();
    const got = flaky.requests.find((r) => r.headers['x-webhook-event-id'] === eventId);
    expect(String(got?.headers.traceparent)).toMatch(new RegExp(`^00-${unsampled}-[0-9a-f]{16}-00$`));
  });
});
