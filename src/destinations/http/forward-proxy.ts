import type { ConnectionOptions } from 'node:tls';
import { Client, Pool, ProxyAgent, type buildConnector, type Dispatcher } from 'undici';
import { proxyAuthorizationSource, type DeliveryProxyConfig } from '../../config/delivery-proxy.js';
import { createNoProxy, type NoProxy } from '../../config/no-proxy.js';
import type { DeliveryOutcome, ProxyFailureReason } from '../../delivery/types.js';
import { failed, inSpan, SpanKind, tracingOn } from '../../observability/spans.js';

/**
 * The installation's forward proxy in the HTTP destination (DELIVERY_PROXY_URL; docs/deploy.md,
 * "A static egress address"), on undici's ProxyAgent: an https:// target through a CONNECT
 * tunnel (the TLS of spec.tls inside it, end to end with the receiver), an http:// target as an
 * absolute-form request to the proxy. What fails on the way to the proxy is told apart from what
 * the receiver answers: it is the installation's failure, not the endpoint's (proxyFailureOf).
 */
export interface ForwardProxy {
  /** http(s)://host:port */
  url: string;
  noProxy: NoProxy;
  /** the Proxy-Authorization value for new proxy connections (re-read credentials), or null */
  authorization: () => string | null;
}

/** The worker's DELIVERY_PROXY_* as the destination uses them. Reads the credential files now (and again while running). */
export function forwardProxyOf(c: DeliveryProxyConfig): ForwardProxy {
  return { url: c.url, noProxy: createNoProxy(c.noProxy), authorization: proxyAuthorizationSource(c.credentials) };
}

/** Raised by the connection to the proxy itself (refused, reset, timed out, its name unknown): the receiver was never asked. */
export class ProxyUnreachableError extends Error {
  readonly code = 'PROXY_UNREACHABLE';

  constructor(cause: Error) {
    super(`forward proxy unreachable: ${cause.message || cause.name}`, { cause });
    this.name = 'ProxyUnreachableError';
  }
}

/** Wraps a connector to the proxy so its failures say they are the proxy's. */
function proxySide(connect: unknown): Pool.Options['connect'] {
  if (typeof connect !== 'function') return connect as Pool.Options['connect'];
  const inner = connect as buildConnector.connector;
  return (options, callback) =>
    inner(options, (...args) => {
      const [err] = args;
      if (err) callback(new ProxyUnreachableError(err), null);
      else callback(...args);
    });
}

type TunnelOptions = Omit<Dispatcher.ConnectOptions, 'origin'>;
type ConnectCallback = (err: Error | null, data: Dispatcher.ConnectData) => void;

/**
 * The pool ProxyAgent asks its CONNECTs of (its client to the proxy sends nothing else): each
 * CONNECT, i.e. each new tunnel, is a client span `forward proxy CONNECT` (docs/tracing.md). undici
 * opens a connection inside the dispatch of the request that needs it, so the span's parent is
 * the span active there: the attempt that caused the tunnel (or the OAuth2 token request). A
 * request that finds a tunnel kept alive asks for none, and has no such span.
 */
class TunnellingPool extends Pool {
  readonly #proxy: URL;

  constructor(proxy: URL, options: Pool.Options) {
    super(proxy, options);
    this.#proxy = proxy;
  }

  override connect(options: TunnelOptions): Promise<Dispatcher.ConnectData>;
  override connect(options: TunnelOptions, callback: ConnectCallback): void;
  override connect(options: TunnelOptions, callback?: ConnectCallback): void | Promise<Dispatcher.ConnectData> {
    // ProxyAgent awaits the promise form; tracing off: straight through, nothing made
    if (callback !== undefined) return super.connect(options, callback);
    if (!tracingOn()) return super.connect(options);
    return inSpan(
      'forward proxy CONNECT',
      { kind: SpanKind.CLIENT, attributes: tunnelAttributes(this.#proxy, options.path) },
      async (span) => {
        const data = await super.connect(options);
        span?.setAttribute('http.response.status_code', data.statusCode);
        // ProxyAgent turns it into the attempt's error (proxyFailureOf); the span says it too
        if (data.statusCode !== 200) failed(span, `forward proxy answered ${data.statusCode} to CONNECT`);
        return data;
      },
    );
  }
}

/** What a CONNECT span says: the proxy (server.*, webhook.proxy) and the tunnel's target, host:port; never the request's headers (its Proxy-Authorization). */
function tunnelAttributes(proxy: URL, target: string) {
  return {
    'http.request.method': 'CONNECT',
    'server.address': proxy.hostname,
    'server.port': Number(proxy.port) || (proxy.protocol === 'https:' ? 443 : 80),
    'webhook.proxy': proxy.host,
    'webhook.proxy_target': target,
  };
}

export interface ProxyAgentOptions {
  /** the target's TLS (spec.tls): a client certificate and key, a CA bundle; inside the tunnel */
  requestTls: Pick<ConnectionOptions, 'cert' | 'key' | 'ca'> | undefined;
  authorization: string | null;
  connections: number | null;
  keepAliveTimeout: number;
}

/** One ProxyAgent: every connection to the proxy is marked as the proxy's (proxySide), those to the receiver are not. */
export function createProxyAgent(proxyUrl: string, o: ProxyAgentOptions): ProxyAgent {
  const proxyHref = new URL(proxyUrl).href;
  return new ProxyAgent({
    uri: proxyUrl,
    ...(o.authorization !== null ? { token: o.authorization } : {}),
    ...(o.requestTls ? { requestTls: o.requestTls } : {}),
    connections: o.connections,
    keepAliveTimeout: o.keepAliveTimeout,
    // the client CONNECT tunnels are asked of (https targets), each CONNECT a span
    clientFactory: (origin: URL, opts: object) =>
      new TunnellingPool(origin, { ...(opts as Pool.Options), connect: proxySide((opts as Pool.Options).connect) }),
    // per origin: the tunnelled pool of an https target (its connect opens the tunnel, then the
    // receiver's TLS: not the proxy's), or, for an http target, the client to the proxy itself
    factory: (origin: string | URL, opts: object): Dispatcher => {
      const options = opts as Pool.Options;
      const toProxy = new URL(String(origin)).href === proxyHref;
      const own = toProxy ? { ...options, connect: proxySide(options.connect) } : options;
      return options.connections === 1 ? new Client(origin, own) : new Pool(origin, own);
    },
  });
}

/** undici's words for a CONNECT the proxy answered with another status than 200 (proxy-agent.js). */
const TUNNEL_REFUSED = /^Proxy response \((\d{3})\) !== 200 when HTTP Tunneling$/;
/** undici's words for a 407 to a request sent through the proxy (an http target). */
const FORWARD_AUTH_REQUIRED = /^Proxy Authentication Required \(407\)$/;

/** The proxy's own statuses that say the proxy, not the receiver, failed (issue 42): these wait. */
const PROXY_FAILURE_STATUSES: ReadonlyMap<number, ProxyFailureReason> = new Map([
  [407, 'auth_required'],
  [502, 'proxy_error'],
  [503, 'proxy_error'],
]);

/**
 * The answers to CONNECT that say the same: those above, and 401, which tinyproxy sends instead of
 * 407 when the credentials are wrong (no receiver can answer a CONNECT: it is the proxy's).
 */
const TUNNEL_FAILURE_STATUSES: ReadonlyMap<number, ProxyFailureReason> = new Map([...PROXY_FAILURE_STATUSES, [401, 'auth_required']]);

/** The line an attempt's log would carry for the proxy's answer. */
const answered = (status: number, reason: ProxyFailureReason): string =>
  `forward proxy answered ${status}${reason === 'auth_required' ? ' (credentials refused)' : ' itself'}`;

/** What a failure of a proxied request says of the proxy: its reason and status, or null when it is the receiver's. */
export function proxyFailureOf(err: unknown): { reason: ProxyFailureReason; status: number | null; error: string } | null {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (e instanceof ProxyUnreachableError) return { reason: 'unreachable', status: null, error: oneLine(e.message) };
    const code = (e as { code?: unknown }).code;
    // the proxy closed the connection before answering CONNECT (undici's ProxyConnectionError)
    if (code === 'UND_ERR_PRX_CONN')
      return { reason: 'unreachable', status: null, error: `forward proxy closed the connection: ${oneLine(e.message)}` };
    const tunnel = TUNNEL_REFUSED.exec(e.message);
    const status = tunnel ? Number(tunnel[1]) : FORWARD_AUTH_REQUIRED.test(e.message) ? 407 : undefined;
    if (status !== undefined) {
      const reason = TUNNEL_FAILURE_STATUSES.get(status);
      // another status (403: the proxy's rules refuse this target; tinyproxy's 500: it could not
      // reach the receiver) is the endpoint's failure, in undici's words
      return reason ? { reason, status, error: answered(status, reason) } : null;
    }
  }
  return null;
}

/**
 * For an http target (the proxy forwards the request and relays the answer): a 407, or a 502/503
 * the proxy made itself rather than relayed. A proxy says an error is its own with a Proxy-Status
 * header (RFC 9209) or, squid, X-Squid-Error; a 502/503 without either is the receiver's.
 */
export function proxyFailureOfResponse(
  status: number,
  headers: Record<string, string | string[] | undefined>,
): { reason: ProxyFailureReason; status: number; error: string } | null {
  const reason = PROXY_FAILURE_STATUSES.get(status);
  if (reason === undefined) return null;
  if (status !== 407 && headers['proxy-status'] === undefined && headers['x-squid-error'] === undefined) return null;
  return { reason, status, error: answered(status, reason) };
}

/** The outcome of a delivery the proxy failed: it waits, no attempt spent (activities/proxy-wait.ts). */
export function proxyDeferred(
  failure: { reason: ProxyFailureReason; status: number | null; error: string },
  durationMs: number,
): DeliveryOutcome {
  return {
    kind: 'deferred',
    cause: 'proxy',
    reason: failure.reason,
    status: failure.status,
    body: null,
    error: failure.error,
    durationMs,
    statusClass: 'proxy',
  };
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 300);
}
