import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { ConnectionOptions } from 'node:tls';
import { Agent, buildConnector, request, type Dispatcher } from 'undici';
import type { Destination, HttpTarget } from '../../delivery/destination.js';
import { invalidRequest } from '../../delivery/types.js';
import { isAppError } from '../../domain/errors.js';
import { DELIVERY_LIMITS } from '../../domain/records.js';
import type { AddressPolicy } from '../../delivery/address-policy.js';
import { classifyError, classifyResponse } from './classify.js';
import { checkLiteralHost, checkResolvedHost, createGuardedLookup } from '../../delivery/guarded-lookup.js';
import type { Resolve } from '../../delivery/guarded-lookup.js';
import { createProxyAgent, proxyDeferred, proxyFailureOf, proxyFailureOfResponse, type ForwardProxy } from './forward-proxy.js';
import { buildHeaders } from './http-headers.js';
import { readBodyPrefix } from './response-body.js';
import { createTlsAlerts } from './tls-alerts.js';
import { spanEvent } from '../../observability/spans.js';

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
  /**
   * DELIVERY_PROXY_URL: the forward proxy requests go through, unless the endpoint says
   * `proxy: Direct` or DELIVERY_NO_PROXY names its host; absent: every request goes direct
   */
  proxy?: ForwardProxy;
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
  // the TLS alert a receiver refuses a handshake with, for the attempt log (tls-alerts.ts)
  const tlsAlerts = createTlsAlerts();
  const newAgent = (tls: TlsOptions = {}) =>
    new Agent({
      connections: opts.agentOptions?.connections ?? null,
      keepAliveTimeout: opts.agentOptions?.keepAliveTimeout ?? 4_000,
      // every new connection resolves through the policy, whatever the attempt and its TLS
      connect: tlsAlerts.connector(buildConnector({ lookup, ...tls })),
    });
  const agent = newAgent();
  const tlsAgents = createTlsDispatchers((tls) => newAgent(tls));
  const proxied = opts.proxy ? createProxiedDispatchers(opts.proxy, opts.agentOptions) : undefined;

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
    const viaProxy = proxied !== undefined && to.proxy !== 'Direct' && !proxied.proxy.noProxy.bypasses(target.hostname);
    if (viaProxy) {
      // the proxy resolves the name itself and our lookup never runs: the policy decides on the
      // addresses the name has now, before the proxy is asked (a DNS failure is the endpoint's, as direct)
      try {
        const refused = await checkResolvedHost(addressPolicy, target.hostname, opts.resolve);
        if (refused) return classifyError(refused, { durationMs: elapsed(), timeoutMs });
      } catch (err) {
        return classifyError(err, { durationMs: elapsed(), timeoutMs });
      }
      // on the attempt's span: which proxy carried it (its address, never its credentials)
      spanEvent('through the forward proxy', { 'webhook.proxy': proxied.address });
    }

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
        // through the proxy: one ProxyAgent per TLS material too (the TLS is the receiver's, inside the tunnel)
        dispatcher: viaProxy ? proxied.for(to.tls) : to.tls ? tlsAgents.for(to.tls) : agent,
        method: to.method,
        headers,
        body: message.body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal,
      });
    } catch (err) {
      // the proxy refused or could not be reached: the installation's failure, the delivery waits
      const failure = viaProxy ? proxyFailureOf(err) : null;
      if (failure) return proxyDeferred(failure, elapsed());
      return classifyError(tlsAlerts.alertOf(err) ?? err, { durationMs: elapsed(), timeoutMs });
    }
    // an http target's request is relayed: a 407, or a 502/503 the proxy says is its own, is the proxy's
    const ownAnswer = viaProxy && target.protocol === 'http:' ? proxyFailureOfResponse(response.statusCode, response.headers) : null;
    if (ownAnswer) {
      await response.body.dump().catch(() => undefined);
      return proxyDeferred(ownAnswer, elapsed());
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
      await Promise.all([agent.close(), tlsAgents.close(), proxied?.close()]);
    },
  };
}

type TlsOptions = Pick<ConnectionOptions, 'cert' | 'key' | 'ca'>;

/** The connect options of an endpoint's spec.tls: its client certificate and key, its CA bundle. */
function tlsOptionsOf(tls: NonNullable<HttpTarget['tls']>): TlsOptions {
  return {
    ...(tls.certificate !== null && tls.key !== null ? { cert: tls.certificate, key: tls.key } : {}),
    // the endpoint's CA replaces the system roots (docs/endpoints-tls.md says how to add to them instead)
    ...(tls.caBundle !== null ? { ca: tls.caBundle } : {}),
  };
}

/** Endpoints' TLS material in use at once, each with its pool; past it the oldest pool is closed (its requests finish). */
const TLS_AGENTS_KEPT = 64;

/** One dispatcher per distinct spec.tls (certificate, key, CA bundle), by a digest of it: the material is never a map key itself. */
function createTlsDispatchers<D extends Dispatcher>(make: (tls: TlsOptions) => D) {
  const dispatchers = new Map<string, D>();
  return {
    for(tls: NonNullable<HttpTarget['tls']>): D {
      const id = createHash('sha256')
        .update(JSON.stringify([tls.certificate, tls.key, tls.caBundle]))
        .digest('hex');
      const known = dispatchers.get(id);
      if (known) {
        // most recently used last: the first is the one to close when over the bound
        dispatchers.delete(id);
        dispatchers.set(id, known);
        return known;
      }
      const made = make(tlsOptionsOf(tls));
      dispatchers.set(id, made);
      if (dispatchers.size > TLS_AGENTS_KEPT) {
        const [oldest, old] = dispatchers.entries().next().value as [string, D];
        dispatchers.delete(oldest);
        void old.close();
      }
      return made;
    },
    async close(): Promise<void> {
      const all = [...dispatchers.values()];
      dispatchers.clear();
      await Promise.all(all.map((d) => d.close()));
    },
  };
}

/**
 * The ProxyAgents of the forward proxy: one without spec.tls, one per TLS material, all with the
 * proxy's credentials as they are now; when the credentials change (a rotated Secret) every one is
 * replaced, the old ones closed once their requests finish.
 */
function createProxiedDispatchers(proxy: ForwardProxy, agentOptions: HttpDestinationOptions['agentOptions']) {
  let authorization = proxy.authorization();
  const make = (requestTls: TlsOptions | undefined) =>
    createProxyAgent(proxy.url, {
      requestTls,
      authorization,
      connections: agentOptions?.connections ?? null,
      keepAliveTimeout: agentOptions?.keepAliveTimeout ?? 4_000,
    });
  let plain = make(undefined);
  let withTls = createTlsDispatchers((tls) => make(tls));
  return {
    proxy,
    /** host:port of the proxy, for the attempt's span */
    address: new URL(proxy.url).host,
    for(tls: HttpTarget['tls']): Dispatcher {
      const now = proxy.authorization();
      if (now !== authorization) {
        authorization = now;
        void plain.close();
        void withTls.close();
        plain = make(undefined);
        withTls = createTlsDispatchers((t) => make(t));
      }
      return tls ? withTls.for(tls) : plain;
    },
    async close(): Promise<void> {
      await Promise.all([plain.close(), withTls.close()]);
    },
  };
}
