import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decoyCredentials,
  floodWrongPasswords,
  sendValid,
  validCredentials,
  type FloodPlan,
  type ValidFigures,
} from '../../bench/fresh-flood.js';
import { createLogger } from '../../src/observability/logger.js';
import { percentile } from '../../bench/stats.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { addCredential, startIngestHarness, type IngestHarness } from '../support/ingest-harness.js';
import { startNginx, type Nginx } from '../support/nginx.js';

// Issue 45: no stranger's wrong passwords turn a valid sender away. An ingest freshly started
// (nothing proven: every valid sender's first request needs a bcrypt comparison), the refusal
// limits at their defaults (10 refusals a minute per address, 60 per source, one comparison at a
// time, 32 waiting), a flood of wrong passwords on many connections (existing sources with their
// usernames, existing ones without, unknown ones), and five valid senders at 5 requests a second
// each. Before the fix every valid request was answered 429 in the second case. Kept small for a
// loaded 2-core machine; the acceptance is what must hold, latency is the bench's
// (`npm run bench:wrong-passwords`, "fresh ingest").

const CONNECTIONS = 100;
const RATE = 5;
const SENDING_S = 6;
const FLOOD_FIRST_MS = 2_000;

const valid = validCredentials();
const decoys = decoyCredentials();

describe('a flood of wrong passwords on a freshly started ingest refuses no valid sender', () => {
  let t: TestDatabase;
  let h: IngestHarness;
  const proxies: Nginx[] = [];

  beforeAll(async () => {
    t = await createTestDatabase();
    // the default refusal limits; ingest trusts the proxy on 127.0.0.1 (nginx below)
    h = await startIngestHarness({ db: t.db, trustedProxies: ['127.0.0.1'] });
    for (const c of [...valid, ...decoys]) await addCredential(h.repos, c.source, c.username, c.password);
  });
  afterAll(async () => {
    for (const p of proxies) await p.close();
    await h?.close();
    await t?.destroy();
  });

  /** A fresh ingest process (nothing proven) on the same database, and two nginx in front of it. */
  const freshIngest = async () => {
    const ingest = await h.startAnother({ logger: createLogger({ level: 'silent' }), sweep: { sweepMinAgeMs: 60_000 } });
    // the Ingress: trusted, appends each client to X-Forwarded-For
    const ingress = await startNginx({ upstream: ingest.url });
    // a proxy of the senders' own (a corporate egress, a NAT): ingest does not trust it, so
    // everyone behind it has its one address
    const shared = await startNginx({ upstream: ingest.url, bind: '127.0.0.99' });
    proxies.push(ingress, shared);
    return { ingest, ingress, shared };
  };

  const run = async (plan: FloodPlan, senders: Parameters<typeof sendValid>[0]) => {
    let stop!: () => void;
    const flood = floodWrongPasswords(plan, new Promise<void>((resolve) => (stop = resolve)));
    await new Promise((resolve) => setTimeout(resolve, FLOOD_FIRST_MS));
    const figures = await sendValid(senders, RATE, SENDING_S);
    stop();
    const answers = await flood;
    return { figures, answers };
  };

  const report = (name: string, f: ValidFigures, answers: Record<string, number>) =>
    `${name}: ${f.accepted}/${f.sent} accepted, refused ${JSON.stringify(f.refused)}, p50 ${Math.round(percentile(f.latenciesMs, 50))} p90 ${Math.round(percentile(f.latenciesMs, 90))} p99 ${Math.round(percentile(f.latenciesMs, 99))} ms; the flood's answers ${JSON.stringify(answers)}`;

  it('from many addresses and through one proxy address, against the valid sources too: every valid sender gets in', async () => {
    const { ingress, shared } = await freshIngest();
    // half the connections straight from 40 addresses, knowing even the valid sources' usernames;
    // half through the shared proxy
    const common = { connections: CONNECTIONS / 2, otherSources: valid.map((c) => c.source), unknownSources: 20 };
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const direct = floodWrongPasswords(
      {
        ...common,
        url: ingress.url,
        localAddresses: Array.from({ length: 40 }, (_, i) => `127.0.2.${i + 1}`),
        knownUsernames: [...decoys, ...valid],
      },
      stopped,
    );
    const proxied = floodWrongPasswords({ ...common, url: shared.url, localAddresses: [], knownUsernames: decoys }, stopped);
    await new Promise((resolve) => setTimeout(resolve, FLOOD_FIRST_MS));
    // each sender from its own address, through the Ingress
    const figures = await sendValid(
      valid.map((c, n) => ({ ...c, url: ingress.url, localAddress: `127.0.0.${11 + n}` })),
      RATE,
      SENDING_S,
    );
    stop();
    const answers: Record<string, number> = {};
    for (const counts of await Promise.all([direct, proxied]))
      for (const [k, v] of Object.entries(counts)) answers[k] = (answers[k] ?? 0) + v;
    const line = report('many addresses and one proxy', figures, answers);
    console.log(line);
    // the flood met the limits: some of it answered 429 (most, on a machine not this loaded)
    expect(answers['429'] ?? 0, line).toBeGreaterThan(0);
    expect(figures.accepted / figures.sent, line).toBeGreaterThanOrEqual(0.99);
  }, 120_000);

  it("from the valid senders' own proxy address: every valid sender gets in", async () => {
    const { shared } = await freshIngest();
    // everyone behind the one proxy: the flood (which does not know the valid sources' usernames)
    // and the five senders share its address
    const { figures, answers } = await run(
      {
        url: shared.url,
        connections: CONNECTIONS,
        localAddresses: [],
        knownUsernames: decoys,
        otherSources: valid.map((c) => c.source),
        unknownSources: 20,
      },
      valid.map((c) => ({ ...c, url: shared.url })),
    );
    const line = report("the senders' own proxy address", figures, answers);
    console.log(line);
    expect(answers['429'] ?? 0, line).toBeGreaterThan(0);
    expect(figures.accepted / figures.sent, line).toBeGreaterThanOrEqual(0.99);
  }, 120_000);
});
