import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/dev/ports.js';
import { sleep } from './wait.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A span as the collector exports it in OTLP/JSON, with its service. */
/** OTLP's span kinds (its protobuf numbering, not the API's enum): what CollectedSpan.kind holds. */
export const OTLP_SPAN_KIND = { SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

/** A random W3C id part: 16 bytes for a trace id, 8 for a span id. */
export const randomHex = (bytes: number): string => randomBytes(bytes).toString('hex');

export interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's enum: 1 internal, 2 server, 3 client, 4 producer, 5 consumer */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  events: Array<{ name: string; attributes: Record<string, string | number | boolean> }>;
  /** the spans this one links to (not its parent) */
  links: Array<{ traceId: string; spanId: string }>;
  status: { code?: number; message?: string };
}

export interface Collector {
  /** OTLP/gRPC endpoint of the collector's receiver (http://127.0.0.1:port) */
  grpcEndpoint: string;
  /** OTLP/HTTP endpoint (protobuf and JSON) */
  httpEndpoint: string;
  spans: CollectedSpan[];
  stop(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
type KeyValues = Array<{ key: string; value: AnyValue }> | undefined;

function attrs(list: KeyValues): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.doubleValue ?? value.boolValue ?? ''));
  }
  return out;
}

/** OTLP/JSON ids are hex (the collector's JSON encoding; base64 is the proto3 JSON default, not OTLP's) */
const hex = (id: string | undefined): string => id ?? '';

/**
 * The OpenTelemetry Collector (core components, built by scripts/tools/go-builds.sh from the
 * collector's Go modules) as the tests' OTLP receiver: it takes OTLP over gRPC, HTTP/protobuf and
 * HTTP/JSON from the processes, and its OTLP/HTTP exporter (encoding json) hands every span to a
 * small server here, where the test reads them.
 */
export async function startCollector(): Promise<Collector> {
  const binary = process.env.OTELCOL_PATH ?? path.join(REPO_ROOT, '.cache/go-servers/bin/otelcol');
  if (!existsSync(binary))
    throw new Error('otelcol not built: run `bash scripts/tools/go-builds.sh otelcol` (npm test provisions it), or set OTELCOL_PATH');
  const spans: CollectedSpan[] = [];
  const sink: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: Array<{ resource?: { attributes?: KeyValues }; scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }> }>;
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = String(attrs(rs.resource?.attributes)['service.name'] ?? '');
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                service,
                traceId: hex(s.traceId as string | undefined),
                spanId: hex(s.spanId as string | undefined),
                parentSpanId: hex(s.parentSpanId as string | undefined),
                name: String(s.name),
                kind: Number(s.kind ?? 0),
                attributes: attrs(s.attributes as KeyValues),
                events: ((s.events as Array<{ name: string; attributes?: KeyValues }> | undefined) ?? []).map((e) => ({
                  name: e.name,
                  attributes: attrs(e.attributes),
                })),
                links: ((s.links as Array<{ traceId?: string; spanId?: string }> | undefined) ?? []).map((l) => ({
                  traceId: hex(l.traceId),
                  spanId: hex(l.spanId),
                })),
                status: (s.status as CollectedSpan['status'] | undefined) ?? {},
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const sinkPort = (sink.address() as AddressInfo).port;
  const [grpcPort, httpPort] = await Promise.all([freePort(), freePort()]);
  const dir = await mkdtemp(path.join(tmpdir(), 'otelcol-'));
  const config = `
receivers:
  otlp:
    protocols:
      grpc: { endpoint: "127.0.0.1:${grpcPort}" }
      http: { endpoint: "127.0.0.1:${httpPort}" }
processors:
  batch: { timeout: 100ms }
exporters:
  otlphttp:
    endpoint: "http://127.0.0.1:${sinkPort}"
    encoding: json
    compression: none
service:
  telemetry:
    logs: { level: warn }
    metrics: { level: none }
  pipelines:
    traces: { receivers: [otlp], processors: [batch], exporters: [otlphttp] }
`;
  await writeFile(path.join(dir, 'config.yaml'), config);
  const child: ChildProcess = spawn(binary, ['--config', path.join(dir, 'config.yaml')], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  child.stdout?.on('data', (b: Buffer) => output.push(b.toString()));
  child.stderr?.on('data', (b: Buffer) => output.push(b.toString()));
  const exited = new Promise((r) => child.once('exit', r));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    await new Promise((r) => sink.close(r));
    await rm(dir, { recursive: true, force: true });
  };
  const until = Date.now() + 30_000;
  for (const port of [grpcPort, httpPort]) {
    for (;;) {
      if (child.exitCode !== null) {
        await stop();
        throw new Error(`otelcol exited with ${child.exitCode}: ${output.join('').slice(-3000)}`);
      }
      const open = await new Promise<boolean>((resolve) => {
        const s = connect(port, '127.0.0.1');
        s.once('connect', () => (s.destroy(), resolve(true)));
        s.once('error', () => resolve(false));
      });
      if (open) break;
      if (Date.now() > until) {
        await stop();
        throw new Error(`otelcol did not listen within 30 s: ${output.join('').slice(-3000)}`);
      }
      await sleep(100);
    }
  }
  return { grpcEndpoint: `http://127.0.0.1:${grpcPort}`, httpEndpoint: `http://127.0.0.1:${httpPort}`, spans, stop };
}
