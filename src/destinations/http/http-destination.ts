import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { ConnectionOptions } from 'node:tls';
import { Agent, request } from 'undici';
import type { Destination, HttpTarget } from '../../delivery/destination.js';
import { invalidRequest } from '../../delivery/types.js';
import { isAppError } from '../../domain/errors.js';
import { DELIVERY_LIMITS } from '../../domain/records.js';
import type { AddressPolicy } from '../../delivery/address-policy.js';
import { classifyError, classifyResponse } from './classify.js';
import { checkLiteralHost, createGuardedLookup } from '../../delivery/guarded-lookup.js';
import type { Resolve } from '../../delivery/guarded-lookup.js';
import { buildHeaders } from './http-headers.js';
import { readBodyPrefix } from './response-body.js';

export interface HttpDestinationOptions {
  addressPolicy: AddressPolicy;
  agentOptions?: {
    /** max connections per origin (default unlimited) */
    connections?: number;
    /** idle keep-alive socket lifetime in ms (default 4000) */
    keepAliveTimeout?: number;
  };
  /** DNS resolution; defaults to the system resolver (dns.lookup) */
  resolve?: Resolve;
  /** epoch ms, for Retry-After HTTP-dates */
  now?: () => number;
}

/**
 * The HTTP destination: one request per message, classified by its status (classify.ts); never
 * throws for a delivery failure. Redirects are not followed (undici's request() does not without a
 * redirect interceptor). Every connection resolves through the address policy.
 */
export function createHttpDestination(opts: HttpDestinationOptions): Destination<HttpTarget> {
  const { addressPolicy } = opts;
  const now = opts.now ?? Date.now;
  const lookup = createGuardedLookup(addressPolicy, opts.resolve);
  const newAgent = (tls: TlsOptions = {}) =>
    new Agent({
      connections: opts.agentOptions?.connections ?? null,
      keepAliveTimeout: opts.agentOptions?.keepAliveTimeout ?? 4_000,
      // every new connection resolves through the policy, whatever the attempt and its TLS
      connect: { lookup, ...tls },
    });
  const agent = newAgent();
  const tlsAgents = createTlsAgents(newAgent);

  const send: Destination<HttpTarget>['send'] = async (message, to, { timeoutMs }) => {
    const started = performance.now();
    const elapsed = (): number => Math.round(performance.now() - started);
    const invalid = (error: string) => invalidRequest(error, elapsed());

    let target: URL;
    try {
      target = new URL(to.url);
    } catch {
      // the URL may carry credentials: do not echo it
      return invalid('endpoint url is not a valid URL');
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') {
      return invalid(`unsupported url scheme ${JSON.stringify(target.protocol)}`);
    }
    if (target.username !== '' || target.password !== '') {
      return invalid('credentials in the endpoint url are not supported, use the auth settings');
    }
    // an IP literal never goes through lookup, so it is checked here
    const blocked = checkLiteralHost(addressPolicy, target.hostname);
    if (blocked) return classifyError(blocked, { durationMs: elapsed(), timeoutMs });

    let headers: Record<string, string>;
    try {
      headers = buildHeaders(message, to);
    } catch (err) {
      if (isAppError(err) && err.kind === 'permanent') return invalid(err.message);
      throw err;
    }

    // one deadline for connect + headers + body; the undici timeouts are the same bound, per phase
    const signal = AbortSignal.timeout(timeoutMs);
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await request(target, {
        // an endpoint with its own TLS (spec.tls) has its own pool, keyed by that TLS: a rotated
        // certificate is a new key, so the next attempt connects with it, without a restart
        dispatcher: to.tls ? tlsAgents.for(to.tls) : agent,
        method: to.method,
        headers,
        body: message.body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal,
      });
    } catch (err) {
      return classifyError(err, { durationMs: elapsed(), timeoutMs });
    }

    const read = await readBodyPrefix(response.body, DELIVERY_LIMITS.responseBodyBytes);
    if (read.error !== undefined) {
      return classifyError(read.error, {
        durationMs: elapsed(),
        timeoutMs,
        status: response.statusCode,
        body: read.text,
      });
    }
    return classifyResponse({
      status: response.statusCode,
      headers: response.headers,
      body: read.text,
      durationMs: elapsed(),
      retryOnStatus: to.retryOnStatus,
      now: now(),
    });
  };

  return {
    send,
    close: async () => {
      await Promise.all([agent.close(), tlsAgents.close()]);
    },
  };
}

type TlsOptions = Pick<ConnectionOptions, 'cert' | 'key' | 'ca'>;

/** Endpoints' TLS material in use at once, each with its pool; past it the oldest pool is closed (its requests finish). */
const TLS_AGENTS_KEPT = 64;

/** One Agent per distinct spec.tls (certificate, key, CA bundle), by a digest of it: the material is never a map key itself. */
function createTlsAgents(newAgent: (tls: TlsOptions) => Agent) {
  const agents = new Map<string, Agent>();
  return {
    for(tls: NonNullable<HttpTarget['tls']>): Agent {
      const id = createHash('sha256')
        .update(JSON.stringify([tls.certificate, tls.key, tls.caBundle]))
        .digest('hex');
      const known = agents.get(id);
      if (known) {
        // most recently used last: the first is the one to close when over the bound
        agents.delete(id);
        agents.set(id, known);
        return known;
      }
      const agent = newAgent({
        ...(tls.certificate !== null && tls.key !== null ? { cert: tls.certificate, key: tls.key } : {}),
        // the endpoint's CA replaces the system roots (docs/endpoints-tls.md says how to add to them instead)
        ...(tls.caBundle !== null ? { ca: tls.caBundle } : {}),
      });
      agents.set(id, agent);
      if (agents.size > TLS_AGENTS_KEPT) {
        const [oldest, old] = agents.entries().next().value as [string, Agent];
        agents.delete(oldest);
        void old.close();
      }
      return agent;
    },
    async close(): Promise<void> {
      await Promise.all([...agents.values()].map((a) => a.close()));
      agents.clear();
    },
  };
}
