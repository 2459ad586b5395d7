import type { FastifyBaseLogger } from 'fastify';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>;
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

function forward(logger: FastifyBaseLogger, level: Level, args: unknown[]): void {
  (logger[level] as (...a: unknown[]) => void).apply(logger, args);
}

/**
 * A request's logger (`req.log`), made on its first line. Fastify makes a pino child per request,
 * its reqId binding serialized and, with redaction on, copied and redacted at once; with request
 * logging off a request almost never logs (the service logs with reqId itself, http/problem.ts),
 * and making them was about 2 % of ingest's CPU under load (docs/benchmarks.md, issue 36).
 */
export class LazyRequestLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  /** The child as fastify would have made it, now. */
  private made(): FastifyBaseLogger {
    this.#child ??= this.parent.child(this.bindings, this.options);
    return this.#child;
  }

  get level(): FastifyBaseLogger['level'] {
    return this.#child?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: FastifyBaseLogger['level']) {
    this.made().level = level;
  }

  fatal(...args: unknown[]): void {
    forward(this.made(), 'fatal', args);
  }
  error(...args: unknown[]): void {
    forward(this.made(), 'error', args);
  }
  warn(...args: unknown[]): void {
    forward(this.made(), 'warn', args);
  }
  info(...args: unknown[]): void {
    forward(this.made(), 'info', args);
  }
  debug(...args: unknown[]): void {
    forward(this.made(), 'debug', args);
  }
  trace(...args: unknown[]): void {
    forward(this.made(), 'trace', args);
  }
  silent(...args: unknown[]): void {
    forward(this.made(), 'silent', args);
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.made().child(bindings, options);
  }
}

/** fastify's `childLoggerFactory`: the request's logger, made when it first logs. */
export const lazyRequestLogger = (logger: FastifyBaseLogger, bindings: Bindings, options: ChildOptions): FastifyBaseLogger =>
  new LazyRequestLogger(logger, bindings, options);
