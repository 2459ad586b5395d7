/** How long a client may take, so that slow or never-ending requests do not hold sockets forever. */
export interface HttpTimeouts {
  /** from the connection (or the previous request) until the request's headers are complete */
  headersMs: number;
  /** the whole request, headers and body, until it is received */
  bodyMs: number;
  /** a connection with nothing to do (no bytes either way) is closed after this */
  idleMs: number;
}

// idle above the 60 s idle timeout of common load balancers, so that the balancer closes first
export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = { headersMs: 10_000, bodyMs: 30_000, idleMs: 75_000 };
