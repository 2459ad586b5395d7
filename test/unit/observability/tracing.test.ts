import { describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '../../../src/config/config.js';
import { ConfigError } from '../../../src/config/env-reader.js';
import { headersOf as buildHeaders, type OutboundRequest } from '../../delivery/outbound.js';
import { isSampled, traceIdOf } from '../../../src/observability/spans.js';
import { otlpProtocol, tracingWanted } from '../../../src/config/tracing-switch.js';
import { traceAttributes, traceOfMessage } from '../../../src/transport/event-message.js';
import { publishBatchBody } from '../../../src/transport/sns-publish-batch.js';

const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('whether the OTEL_* variables turn tracing on', () => {
  it.each([
    { env: {}, on: false },
    { env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }, on: true },
    { env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }, on: true },
    { env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }, on: false },
    { env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }, on: false },
    { env: { OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }, on: false },
  ])('$env -> $on', ({ env, on }) => {
    expect(tracingWanted(env)).toBe(on);
  });

  it.each([
    { env: {}, protocol: 'http/protobuf' },
    { env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, protocol: 'grpc' },
    { env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }, protocol: 'http/json' },
    { env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' }, protocol: { invalid: 'thrift' } },
  ])('protocol of $env -> $protocol', ({ env, protocol }) => {
    expect(otlpProtocol(env)).toEqual(protocol);
  });

  it.each([
    {
      env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'http' },
      problem: 'OTEL_EXPORTER_OTLP_PROTOCOL must be one of http/protobuf, http/json, grpc, got "http"',
    },
    {
      env: { OTEL_TRACES_SAMPLER: 'ratio' },
      problem: expect.stringMatching(/^OTEL_TRACES_SAMPLER must be one of always_on, .*, got "ratio"$/),
    },
    { env: { OTEL_TRACES_SAMPLER_ARG: '2' }, problem: 'OTEL_TRACES_SAMPLER_ARG must be a number between 0 and 1, got "2"' },
    {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4317' },
      problem: 'OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL, got "collector:4317"',
    },
  ])('the configuration names $env', ({ env, problem }) => {
    let problems: string[] = [];
    try {
      loadWorkerConfig({ DATABASE_URL: 'postgres://u:p@db/w', ...env });
    } catch (err) {
      if (err instanceof ConfigError) problems = err.problems;
    }
    expect(problems).toContainEqual(problem);
  });
});

describe('W3C trace context', () => {
  it.each([
    { tp: TP, traceId: '4bf92f3577b34da6a3ce929d0e0e4736', sampled: true },
    { tp: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00', traceId: '4bf92f3577b34da6a3ce929d0e0e4736', sampled: false },
    { tp: '00-00000000000000000000000000000000-00f067aa0ba902b7-01', traceId: undefined, sampled: true },
    { tp: 'garbage', traceId: undefined, sampled: false },
  ])('$tp -> trace $traceId', ({ tp, traceId, sampled }) => {
    expect(traceIdOf(tp)).toBe(traceId);
    if (traceId !== undefined) expect(isSampled(tp)).toBe(sampled);
  });

  it("travels as SNS message attributes and comes back from SQS's", () => {
    const body = publishBatchBody('arn:aws:sns:us-east-1:0:t', [
      { id: 'e0', message: '{}', attributes: traceAttributes({ traceparent: TP, tracestate: 'k=v' }) },
    ]);
    const m = 'PublishBatchRequestEntries.member.1.MessageAttributes.entry';
    expect(body).toContain(`&${m}.1.Name=traceparent&${m}.1.Value.DataType=String&${m}.1.Value.StringValue=${TP}`);
    expect(body).toContain(`&${m}.2.Name=tracestate&${m}.2.Value.DataType=String&${m}.2.Value.StringValue=k%3Dv`);
    expect(traceOfMessage({ traceparent: { StringValue: TP }, tracestate: { StringValue: 'k=v' } })).toEqual({
      traceparent: TP,
      tracestate: 'k=v',
    });
    expect(traceOfMessage({ traceparent: { StringValue: 'not-one' } })).toBeUndefined();
    expect(traceOfMessage(undefined)).toBeUndefined();
  });

  it('goes to the receiver as traceparent / tracestate, over a custom header of the same name', () => {
    const req: OutboundRequest = {
      url: 'http://127.0.0.1:1/hook',
      method: 'POST',
      body: Buffer.from('{}'),
      contentType: 'application/json',
      auth: { type: 'NONE', username: null, secret: null },
      customHeaders: { traceparent: 'mine', tracestate: 'mine' },
      timeoutMs: 5_000,
      retryOnStatus: [],
      meta: { eventId: 'e', source: 's', eventType: null, deliveryId: 'd', attempt: 1 },
    };
    expect(buildHeaders({ ...req, trace: { traceparent: TP } })).toMatchObject({ traceparent: TP });
    expect(buildHeaders({ ...req, trace: { traceparent: TP } })).not.toHaveProperty('tracestate');
    expect(buildHeaders({ ...req, trace: { traceparent: TP, tracestate: 'a=1' } })).toMatchObject({ traceparent: TP, tracestate: 'a=1' });
    // no trace (tracing off, or the endpoint said no): the endpoint's own headers as they are
    expect(buildHeaders(req)).toMatchObject({ traceparent: 'mine' });
  });
});
