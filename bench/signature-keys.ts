// What an HMAC costs with its key as a Buffer (or string) per call against a KeyObject kept, for
// each signature the service computes: ingest's inbound check of every provider scheme
// (src/ingest/signatures.ts), the Basic username comparison (src/ingest/credential-verifier.ts)
// and the outbound signatures (src/delivery/signature.ts, commit 5d63583). node 24's createHmac
// turns a Buffer or string key into a key object on every call. Each row runs the code the
// service runs; "old" is the same code with the key handed over as before it was kept.
//
//   tsx bench/signature-keys.ts          (SIGNATURE_BENCH_ITERATIONS per row and way, default 20 000)
//
// Old and new alternate in blocks after a warm-up; the figure is this process's CPU per call.
import { createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import { signBody, standardWebhooksSignature } from '../src/delivery/signature.js';
import type { SignatureVerification } from '../src/domain/records.js';
import { verifySignature, type RequestHeaders } from '../src/ingest/signatures.js';
import { PROVIDERS, whsec } from '../test/support/providers.js';
import { round } from './stats.js';

interface Row {
  what: string;
  old: () => void;
  new: () => void;
}

const NOW = 1_767_000_000;
const BODY = '{"id":"evt_1","type":"invoice.paid","data":{"object":{"amount":1200}}}';
const BLOCKS = 4;

const cpuUs = (since: NodeJS.CpuUsage): number => {
  const u = process.cpuUsage(since);
  return u.user + u.system;
};

async function inboundRows(): Promise<Row[]> {
  const rows: Row[] = [];
  for (const p of PROVIDERS) {
    const headers: RequestHeaders = await p.sign(BODY, p.secret, NOW);
    const body = Buffer.from(BODY);
    for (const secrets of [[p.secret], [p.other, whsec(), p.secret]]) {
      // a source's row as the credential verifier holds it: one record, request after request
      const v: SignatureVerification = { type: p.type, secrets, toleranceSeconds: 300, ...(p.hmac ? { hmac: p.hmac } : {}) };
      const verified = (keys: 'kept' | 'bytes') => () => {
        if (!verifySignature(v, body, headers, NOW, keys).ok) throw new Error(`${p.type}: the bench's signature did not verify`);
      };
      rows.push({ what: `inbound ${p.type}, ${secrets.length} secret(s)`, old: verified('bytes'), new: verified('kept') });
    }
  }
  return rows;
}

function basicRow(): Row {
  // credential-verifier.ts's sameString: two salted HMACs compared in constant time
  const salt = randomBytes(32);
  const saltKey = createSecretKey(salt);
  const same = (key: Buffer | KeyObject, a: string, b: string): boolean =>
    timingSafeEqual(createHmac('sha256', key).update(a).digest(), createHmac('sha256', key).update(b).digest());
  return {
    what: 'inbound Basic username comparison',
    old: () => void same(salt, 'example', 'example'),
    new: () => void same(saltKey, 'example', 'example'),
  };
}

function outboundRows(): Row[] {
  const body = Buffer.from(BODY);
  const secret = 'change-me-signing-secret';
  const key = whsec();
  const keyBytes = Buffer.from(key.slice('whsec_'.length), 'base64');
  const prefix = Buffer.from(`evt_1.${NOW}.`);
  return [
    {
      what: 'outbound X-Webhook-Signature',
      old: () => void createHmac('sha256', secret).update(body).digest('base64'),
      new: () => void signBody(body, secret),
    },
    {
      what: 'outbound Standard Webhooks v1',
      old: () => void `v1,${createHmac('sha256', keyBytes).update(prefix).update(body).digest('base64')}`,
      new: () => void standardWebhooksSignature('evt_1', NOW, body, [key]),
    },
  ];
}

function measure(row: Row, iterations: number): { oldUs: number; newUs: number } {
  const run = (fn: () => void, n: number): number => {
    const t = process.cpuUsage();
    for (let i = 0; i < n; i++) fn();
    return cpuUs(t);
  };
  run(row.old, Math.min(2_000, iterations));
  run(row.new, Math.min(2_000, iterations));
  const perBlock = Math.max(1, Math.ceil(iterations / BLOCKS));
  let oldUs = 0;
  let newUs = 0;
  for (let b = 0; b < BLOCKS; b++) {
    oldUs += run(row.old, perBlock);
    newUs += run(row.new, perBlock);
  }
  return { oldUs: oldUs / (perBlock * BLOCKS), newUs: newUs / (perBlock * BLOCKS) };
}

const iterations = Number(process.env.SIGNATURE_BENCH_ITERATIONS ?? 20_000);
if (!Number.isInteger(iterations) || iterations < 1) throw new Error('SIGNATURE_BENCH_ITERATIONS must be a positive integer');

const rows = [...(await inboundRows()), basicRow(), ...outboundRows()];
const width = Math.max(...rows.map((r) => r.what.length));
console.log(`${'µs per call (CPU)'.padEnd(width)}  ${'old'.padStart(7)}  ${'new'.padStart(7)}  old/new   (${iterations} calls each)`);
const figures: Record<string, { old_us: number; new_us: number }> = {};
for (const row of rows) {
  const { oldUs, newUs } = measure(row, iterations);
  figures[row.what] = { old_us: round(oldUs, 2), new_us: round(newUs, 2) };
  console.log(
    `${row.what.padEnd(width)}  ${oldUs.toFixed(2).padStart(7)}  ${newUs.toFixed(2).padStart(7)}  x${(oldUs / newUs).toFixed(2)}`,
  );
}
console.log(JSON.stringify({ iterations, node: process.version, figures }));
