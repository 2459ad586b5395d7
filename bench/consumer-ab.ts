// A/B of consumer builds or settings, the compiled consumer alone: fauxqs, Temporal dev server,
// Postgres, no worker (the started workflows just wait), so its CPU per event and its SQS calls
// are measured without the rest of the pipeline competing for the 2 cores. Variants alternate
// round by round; each gets a fresh process. Per variant and round: a burst of AB_EVENTS (CPU per
// event, ReceiveMessage / DeleteMessageBatch calls per event, counted by a proxy in front of
// fauxqs), then AB_LOW_RATE events/s for AB_LOW_S s (CPU per event, publish -> receive and
// publish -> delete latency), 5 s idle, and VmHWM.
//
//   npx tsc -p tsconfig.build.json --outDir .ab/a/dist   # a build to compare against dist/
//   AB_VARIANTS='[{"name":"a","cli":".ab/a/dist/cmd/cli.js"},{"name":"b","cli":"dist/cmd/cli.js","env":{"K":"V"},"nodeFlags":[]}]' \
//     AB_ROUNDS=2 npx tsx bench/consumer-ab.ts
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { freePort } from '../src/dev/ports.js';
import { encodeEventMessage } from '../src/transport/event-message.js';
import { chartEnv, imageEnv, nodeFlagsFor } from './cli-unit.js';
import { startInfra } from './infra.js';

interface Variant {
  name: string;
  cli: string;
  env?: Record<string, string>;
  /** node's own flags before the CLI (V8 flags NODE_OPTIONS refuses); default the chart's consumer.nodeFlags */
  nodeFlags?: string[];
}
const variants = JSON.parse(process.env.AB_VARIANTS ?? '[{"name":"a","cli":"dist/cmd/cli.js"}]') as Variant[];
const rounds = Number(process.env.AB_ROUNDS ?? 3);
const events = Number(process.env.AB_EVENTS ?? 400);
const lowS = Number(process.env.AB_LOW_S ?? 10);
const lowRate = Number(process.env.AB_LOW_RATE ?? 5);
const concurrency = process.env.AB_CONCURRENCY ?? '10';
const LOG_DIR = '.data/ab/';

function procTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}
function statusKb(pid: number, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}
function machineBusy(): number {
  const v = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  return v.slice(0, 8).reduce((a, b) => a + b, 0) - (v[3] ?? 0) - (v[4] ?? 0);
}

const infra = await startInfra();
const upstream = new URL(infra.awsEndpoint);

// counting proxy between the consumer and fauxqs: calls by action, deleted messages, latencies
const calls = new Map<string, number>();
let deleted = 0;
const eventOfReceipt = new Map<string, string>();
const publishedAt = new Map<string, number>();
const latencies: number[] = [];
const recvLat: number[] = [];
const proxy = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const action = String(req.headers['x-amz-target'] ?? 'query').replace('AmazonSQS.', '');
    calls.set(action, (calls.get(action) ?? 0) + 1);
    if (action === 'DeleteMessageBatch') {
      const now = performance.now();
      const entries = (JSON.parse(body.toString()) as { Entries: { ReceiptHandle: string }[] }).Entries;
      deleted += entries.length;
      for (const e of entries) {
        const id = eventOfReceipt.get(e.ReceiptHandle);
        const t = id === undefined ? undefined : publishedAt.get(id);
        if (t !== undefined) latencies.push(now - t);
      }
    }
    const up = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (ur) => {
        const out: Buffer[] = [];
        ur.on('data', (c: Buffer) => out.push(c));
        ur.on('end', () => {
          const payload = Buffer.concat(out);
          if (action === 'ReceiveMessage') {
            const msgs =
              (JSON.parse(payload.toString() || '{}') as { Messages?: { ReceiptHandle: string; Body: string }[] }).Messages ?? [];
            const now = performance.now();
            for (const m of msgs) {
              const id = (JSON.parse(m.Body) as { eventId: string }).eventId;
              eventOfReceipt.set(m.ReceiptHandle, id);
              const t = publishedAt.get(id);
              if (t !== undefined) recvLat.push(now - t);
            }
          }
          res.writeHead(ur.statusCode ?? 500, ur.headers);
          res.end(payload);
        });
      },
    );
    up.on('error', () => res.destroy());
    res.on('error', () => undefined);
    up.end(body);
  });
});
const proxyPort = await freePort();
await new Promise<void>((r) => proxy.listen(proxyPort, '127.0.0.1', r));

async function send(ids: string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 10) {
    const batch = ids.slice(i, i + 10);
    const now = performance.now();
    for (const id of batch) publishedAt.set(id, now);
    await infra.aws.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: infra.fanoutTopology.queueUrl,
        Entries: batch.map((id, j) => ({ Id: `m${j}`, MessageBody: encodeEventMessage(id) })),
      }),
    );
  }
}

async function waitDeleted(target: number): Promise<void> {
  const deadline = Date.now() + 300_000;
  while (deleted < target) {
    if (Date.now() > deadline) throw new Error(`timed out: ${deleted}/${target} deleted`);
    await sleep(20);
  }
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

mkdirSync(LOG_DIR, { recursive: true });
const results: Record<string, string[]> = {};
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? variants : [...variants].reverse();
  for (const v of order) {
    const port = await freePort();
    const logFd = openSync(path.join(LOG_DIR, `${v.name}.log`), 'w');
    const child = spawn(process.execPath, [...nodeFlagsFor('consumer', v.nodeFlags ? { consumer: v.nodeFlags } : {}), v.cli, 'consumer'], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        ...imageEnv(),
        ...chartEnv('consumer'),
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        AWS_REGION: 'us-east-1',
        DATABASE_URL: infra.pgUrl,
        TEMPORAL_ADDRESS: infra.temporalAddress,
        AWS_ENDPOINT_URL: `http://127.0.0.1:${proxyPort}`,
        QUEUE_URL: infra.fanoutTopology.queueUrl,
        CONSUMER_CONCURRENCY: concurrency,
        LOG_LEVEL: 'info',
        ...v.env,
        MANAGEMENT_PORT: String(port),
      },
      stdio: ['ignore', logFd, logFd],
    });
    closeSync(logFd);
    const pid = child.pid ?? 0;
    for (;;) {
      try {
        const r = await fetch(`http://127.0.0.1:${port}/readyz`);
        await r.arrayBuffer();
        if (r.status === 200) break;
      } catch {
        /* not yet */
      }
      await sleep(100);
    }
    // warm-up
    let base = deleted;
    await send(Array.from({ length: 50 }, () => randomUUID()));
    await waitDeleted(base + 50);
    await sleep(500);
    // burst
    calls.clear();
    base = deleted;
    const t0 = procTicks(pid);
    const m0 = machineBusy();
    const w0 = performance.now();
    await send(Array.from({ length: events }, () => randomUUID()));
    await waitDeleted(base + events);
    const ms = ((procTicks(pid) - t0) * 10) / events;
    const wall = (performance.now() - w0) / 1000;
    const other = (machineBusy() - m0) / 100;
    const burstCalls = Object.fromEntries(calls);
    const recvPerEv = (calls.get('ReceiveMessage') ?? 0) / events;
    const delPerEv = (calls.get('DeleteMessageBatch') ?? 0) / events;
    // low rate
    latencies.length = 0;
    recvLat.length = 0;
    calls.clear();
    base = deleted;
    const t1 = procTicks(pid);
    const n = Math.round(lowS * lowRate);
    for (let i = 0; i < n; i++) {
      await send([randomUUID()]);
      await sleep(1000 / lowRate);
    }
    await waitDeleted(base + n);
    const lowMs = ((procTicks(pid) - t1) * 10) / n;
    const t2 = procTicks(pid);
    await sleep(5000);
    const idleMsPerS = ((procTicks(pid) - t2) * 10) / 5;
    const line =
      `${v.name.padEnd(12)} burst ${ms.toFixed(2)} ms/ev  ${(events / wall).toFixed(0)} ev/s  recv/ev ${recvPerEv.toFixed(2)} del/ev ${delPerEv.toFixed(2)}` +
      `  machine busy ${other.toFixed(1)} s | low ${lowMs.toFixed(2)} ms/ev p50 ${pct(latencies, 50).toFixed(0)} p99 ${pct(latencies, 99).toFixed(0)} max ${Math.max(...latencies).toFixed(0)} ms (to receive p50 ${pct(recvLat, 50).toFixed(0)} p99 ${pct(recvLat, 99).toFixed(0)})` +
      ` idle ${idleMsPerS.toFixed(1)} ms/s | HWM ${(statusKb(pid, 'VmHWM') / 1024).toFixed(0)} RSS ${(statusKb(pid, 'VmRSS') / 1024).toFixed(0)} MB ${JSON.stringify(burstCalls)}`;
    console.log(line);
    (results[v.name] ??= []).push(line);
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}
console.log('---');
for (const ls of Object.values(results)) for (const l of ls) console.log(l);
proxy.close();
await infra.stop();
process.exit(0);
