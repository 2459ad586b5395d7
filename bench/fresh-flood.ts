import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import bcrypt from 'bcrypt';
import { Agent, request } from 'undici';
import type { Db } from '../src/db/knex.js';
import { createRepositories } from '../src/db/repositories.js';

/**
 * Wrong passwords against an ingest that has just started (no credential proven), while valid
 * senders of several sources send their first requests: the case of issue 45, where a flood from
 * the senders' own address (a shared proxy) or against their sources answered every one of them
 * 429. Used by test/ingest/wrong-passwords-flood.test.ts (bounded) and the bench's
 * "wrong passwords, fresh ingest" rows (fresh-flood-child.ts runs the flood in a process of its own).
 */
export interface Credential {
  source: string;
  username: string;
  password: string;
}

export interface FloodPlan {
  /** where the flood is sent (ingest, or a proxy in front of it) */
  url: string;
  connections: number;
  /** the flood's client addresses, one per connection in turn (loopback 127.x.y.z); empty: the default */
  localAddresses: string[];
  /** sources that exist: the flood sends their username (it knows them) with wrong passwords */
  knownUsernames: Array<{ source: string; username: string }>;
  /** sources that exist whose usernames the flood does not know: wrong usernames and passwords */
  otherSources: string[];
  /** how many source names that do not exist it cycles through */
  unknownSources: number;
}

export type StatusCounts = Record<string, number>;

const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

/** The i-th request of the flood: a known username, an existing source with a wrong one, or an unknown source, in turn. */
function floodRequest(plan: FloodPlan, i: number): { source: string; authorization: string } {
  const wrong = randomBytes(9).toString('base64url');
  const kinds = [
    ...(plan.knownUsernames.length > 0 ? ['known'] : []),
    ...(plan.otherSources.length > 0 ? ['other'] : []),
    ...(plan.unknownSources > 0 ? ['unknown'] : []),
  ];
  const kind = kinds[i % kinds.length];
  const n = Math.floor(i / kinds.length);
  if (kind === 'known') {
    const k = plan.knownUsernames[n % plan.knownUsernames.length]!;
    return { source: k.source, authorization: basic(k.username, wrong) };
  }
  if (kind === 'other') return { source: plan.otherSources[n % plan.otherSources.length]!, authorization: basic(`guess-${n % 7}`, wrong) };
  return { source: `no-such-source-${n % Math.max(1, plan.unknownSources)}`, authorization: basic('guess', wrong) };
}

/** `plan.connections` loops of wrong passwords until `stop` resolves; the answers by status. */
export async function floodWrongPasswords(plan: FloodPlan, stop: Promise<void>): Promise<StatusCounts> {
  const counts: StatusCounts = {};
  let stopped = false;
  void stop.then(() => (stopped = true));
  const agents = new Map<string, Agent>();
  const agentFor = (address: string | undefined): Agent | undefined => {
    if (address === undefined) return undefined;
    let a = agents.get(address);
    if (!a) agents.set(address, (a = new Agent({ localAddress: address, connections: plan.connections })));
    return a;
  };
  let next = 0;
  const loop = async (c: number) => {
    const dispatcher = agentFor(plan.localAddresses.length > 0 ? plan.localAddresses[c % plan.localAddresses.length] : undefined);
    while (!stopped) {
      const { source, authorization } = floodRequest(plan, next++);
      let key: string;
      try {
        const res = await request(`${plan.url}/api/webhooks/${source}`, {
          method: 'POST',
          ...(dispatcher ? { dispatcher } : {}),
          headers: { authorization, 'content-type': 'application/json' },
          body: '{"id":"wrong","type":"t"}',
          headersTimeout: 30_000,
          bodyTimeout: 30_000,
        });
        await res.body.text();
        key = String(res.statusCode);
      } catch {
        key = 'errors';
        await sleep(50);
      }
      counts[key] = (counts[key] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: plan.connections }, (_, c) => loop(c)));
  await Promise.all([...agents.values()].map((a) => a.close()));
  return counts;
}

export interface ValidSender extends Credential {
  /** its client address (loopback 127.x.y.z); absent: the default */
  localAddress?: string;
  /** where it sends (ingest, or a proxy in front of it) */
  url: string;
}

export interface ValidFigures {
  sent: number;
  accepted: number;
  /** the statuses of those not accepted */
  refused: StatusCounts;
  latenciesMs: number[];
}

/**
 * Each sender sends `rate` events a second for `durationS`, each on its own schedule (no waiting
 * for the previous), the senders' first requests spread over the first second, as senders that
 * do not start together.
 */
export async function sendValid(senders: ValidSender[], rate: number, durationS: number): Promise<ValidFigures> {
  const figures: ValidFigures = { sent: 0, accepted: 0, refused: {}, latenciesMs: [] };
  const agents: Agent[] = [];
  const one = async (s: ValidSender, k: number) => {
    const dispatcher = new Agent(s.localAddress ? { localAddress: s.localAddress } : {});
    agents.push(dispatcher);
    const authorization = basic(s.username, s.password);
    const total = Math.round(rate * durationS);
    const start = performance.now() + (k * 1000) / senders.length;
    const pending: Array<Promise<void>> = [];
    for (let i = 0; i < total; i++) {
      const wait = start + (i * 1000) / rate - performance.now();
      if (wait > 0) await sleep(wait);
      figures.sent++;
      pending.push(
        (async () => {
          const t0 = performance.now();
          let status: string;
          try {
            const res = await request(`${s.url}/api/webhooks/${s.source}`, {
              method: 'POST',
              dispatcher,
              headers: { authorization, 'content-type': 'application/json' },
              body: JSON.stringify({ id: `fresh-${s.source}-${process.pid}-${i}-${Date.now()}`, type: 'bench.fresh_flood' }),
              // a slow answer is measured, not counted as refused (a loaded machine's test run)
              headersTimeout: 90_000,
              bodyTimeout: 90_000,
            });
            await res.body.text();
            status = String(res.statusCode);
          } catch {
            status = 'errors';
          }
          figures.latenciesMs.push(performance.now() - t0);
          if (status === '200') figures.accepted++;
          else figures.refused[status] = (figures.refused[status] ?? 0) + 1;
        })(),
      );
    }
    await Promise.all(pending);
  };
  await Promise.all(senders.map((s, k) => one(s, k)));
  await Promise.all(agents.map((a) => a.close()));
  return figures;
}

/** Five sources' valid senders (source `valid-N`, each from 127.0.0.(11+N) unless told). */
export function validCredentials(count = 5): Credential[] {
  return Array.from({ length: count }, (_, n) => ({
    source: `valid-${n + 1}`,
    username: `sender-${n + 1}`,
    password: `right-${n + 1}-password`,
  }));
}

/** Existing sources the flood knows the usernames of (none of the valid senders'). */
export function decoyCredentials(count = 3): Credential[] {
  return Array.from({ length: count }, (_, n) => ({
    source: `decoy-${n + 1}`,
    username: `decoy-${n + 1}`,
    password: `decoy-${n + 1}-password`,
  }));
}

/** The valid and decoy sources' credentials in the database (the bench's; the test adds its own). */
export async function seedFreshFloodCredentials(db: Db): Promise<void> {
  const repos = createRepositories(db);
  for (const c of [...validCredentials(), ...decoyCredentials()]) {
    await repos.credentials.upsertByResourceUid(`bench:${c.source}`, {
      source: c.source,
      username: c.username,
      passwordHash: await bcrypt.hash(c.password, 10),
      eventIdRule: null,
      eventTypeRule: null,
      resourceName: `bench/${c.source}`,
    });
  }
}

/** floodWrongPasswords in a child process (fresh-flood-child.ts) for `seconds`. */
export function floodInChild(plan: FloodPlan, seconds: number): Promise<StatusCounts> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/fresh-flood-child.ts', JSON.stringify(plan), String(seconds)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise<StatusCounts>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      try {
        resolve(JSON.parse(out) as StatusCounts);
      } catch {
        reject(new Error(`the flood's process exited ${String(code)} without its figures: ${out.slice(0, 200)}`));
      }
    });
  });
}
