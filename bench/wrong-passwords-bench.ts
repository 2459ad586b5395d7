import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { percentile, round } from './stats.js';

/**
 * A valid sender's latency alone, then while many connections send wrong passwords to the same
 * ingest (the refusal limits of src/ingest/refusal-limiter.ts at their defaults). The attackers
 * run in a process of their own (autocannon's CLI), so their event loop is not the sender's.
 * Target (issue 36): the sender's p99 under the flood within 3x of its p99 alone, every one of
 * its requests accepted.
 */
export interface SenderFigures {
  sent: number;
  accepted: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface WrongPasswordsFigures {
  rate: number;
  durationS: number;
  connections: number;
  alone: SenderFigures;
  flooded: SenderFigures;
  /** the flood's answers by status (401: a comparison was made; 429: refused before any) */
  wrong: Record<string, number>;
  /** flooded p99 / alone p99 */
  ratio: number;
}

export interface WrongPasswordsDeps {
  /** a compiled ingest */
  ingestUrl: string;
  source: string;
  /** the source's right Basic credentials */
  authorization: string;
  rate: number;
  durationS: number;
  connections: number;
  log: (line: string) => void;
}

const WRONG = `Basic ${Buffer.from('attacker:not-the-password').toString('base64')}`;

/** Sends `rate` valid events a second for `durationS`, each on its own schedule (no waiting for the previous). */
async function validSender(deps: WrongPasswordsDeps, label: string): Promise<SenderFigures> {
  const latencies: number[] = [];
  let accepted = 0;
  const pending: Array<Promise<void>> = [];
  const total = Math.round(deps.rate * deps.durationS);
  const start = performance.now();
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / deps.rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(
      (async () => {
        const t0 = performance.now();
        try {
          const res = await request(`${deps.ingestUrl}/api/webhooks/${deps.source}`, {
            method: 'POST',
            headers: { authorization: deps.authorization, 'content-type': 'application/json' },
            body: JSON.stringify({ id: `wp-${label}-${process.pid}-${i}-${Date.now()}`, type: 'bench.wrong_passwords' }),
            headersTimeout: 30_000,
            bodyTimeout: 30_000,
          });
          await res.body.text();
          if (res.statusCode === 200) accepted++;
        } catch {
          // counted as not accepted
        }
        latencies.push(performance.now() - t0);
      })(),
    );
  }
  await Promise.all(pending);
  return {
    sent: total,
    accepted,
    p50Ms: round(percentile(latencies, 50)),
    p99Ms: round(percentile(latencies, 99)),
    maxMs: round(Math.max(...latencies)),
  };
}

interface AutocannonResult {
  statusCodeStats?: Record<string, { count: number }>;
  errors?: number;
}

/** autocannon's CLI, `connections` connections of wrong passwords, until stopped or `seconds` are over. */
function flood(deps: WrongPasswordsDeps, seconds: number): { done: Promise<Record<string, number>> } {
  const child = spawn(
    process.execPath,
    [
      'node_modules/autocannon/autocannon.js',
      '--json',
      '-c',
      String(deps.connections),
      '-d',
      String(seconds),
      '-m',
      'POST',
      '-H',
      `authorization=${WRONG}`,
      '-H',
      'content-type=application/json',
      '-b',
      '{"id":"wrong","type":"t"}',
      `${deps.ingestUrl}/api/webhooks/${deps.source}`,
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const done = new Promise<Record<string, number>>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', () => {
      try {
        const r = JSON.parse(out) as AutocannonResult;
        const counts: Record<string, number> = {};
        for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) counts[code] = s.count;
        if (r.errors) counts.errors = r.errors;
        resolve(counts);
      } catch (err) {
        reject(new Error(`autocannon's output could not be read: ${String(err)}: ${out.slice(0, 200)}`));
      }
    });
  });
  return { done };
}

export async function runWrongPasswordsBench(deps: WrongPasswordsDeps): Promise<WrongPasswordsFigures> {
  deps.log(`wrong passwords: a valid sender at ${deps.rate}/s for ${deps.durationS} s alone`);
  // warm-up: connections, the credential proven valid (the verifier's cache), JIT
  await validSender({ ...deps, durationS: 2 }, 'warmup');
  const alone = await validSender(deps, 'alone');
  deps.log(`wrong passwords: the same while ${deps.connections} connections send wrong passwords`);
  // the flood starts first and outlasts the sender
  const attack = flood(deps, deps.durationS + 4);
  await sleep(2_000);
  const flooded = await validSender(deps, 'flooded');
  const wrong = await attack.done;
  return {
    rate: deps.rate,
    durationS: deps.durationS,
    connections: deps.connections,
    alone,
    flooded,
    wrong,
    ratio: alone.p99Ms > 0 ? round(flooded.p99Ms / alone.p99Ms, 2) : 0,
  };
}

/** The bench table's rows. */
export function wrongPasswordsRows(f: WrongPasswordsFigures): string[] {
  const row = (name: string, s: SenderFigures) => `| ${name} | ${s.accepted}/${s.sent} | ${s.p50Ms} | ${s.p99Ms} | ${s.maxMs} |`;
  const answers = Object.entries(f.wrong)
    .map(([code, n]) => `${code}: ${n}`)
    .join(', ');
  return [
    `Wrong passwords: a valid sender at ${f.rate}/s for ${f.durationS} s, alone and under ${f.connections} connections of wrong passwords`,
    '',
    '| valid sender | accepted | p50 ms | p99 ms | max ms |',
    '|---|---|---|---|---|',
    row('alone', f.alone),
    row(`under ${f.connections} connections of wrong passwords`, f.flooded),
    '',
    `p99 under the flood / alone: ${f.ratio}x (target: within 3x); the flood's answers: ${answers}`,
  ];
}
