import autocannon, { type RequestData } from 'autocannon';
import type { LoadOptions, LoadResult } from '../protocol.js';
import type { Unit } from './unit.js';

/** The load generator, alone in its process so it never shares an event loop with a server. */
export function startLoadUnit(): Unit {
  return {
    port: null,
    load: runLoad,
    async stop() {},
  };
}

async function runLoad(o: LoadOptions): Promise<LoadResult> {
  let seq = 0;
  // a new external id per request exercises the insert path; a fixed one the duplicate path
  const nextBody = (): string => JSON.stringify({ id: o.ids === 'unique' ? `${o.idPrefix}-${seq++}` : `${o.idPrefix}-dup`, type: 'bench' });
  const result = await autocannon({
    url: o.url,
    connections: o.connections,
    duration: o.durationS,
    method: 'POST',
    headers: { authorization: o.authorization, 'content-type': 'application/json' },
    requests: [{ setupRequest: (req: RequestData): RequestData => ({ ...req, body: nextBody() }) }],
  });
  const ok = result['2xx'];
  return {
    ok,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationS: result.duration,
    rps: ok / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
  };
}
