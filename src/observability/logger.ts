import pino, { type Logger } from 'pino';

export type { Logger };

/** JSON logs to stdout; credentials never reach them (redacted by path as a second line of defence). */
export function createLogger(opts: { level?: string; name?: string } = {}): Logger {
  return pino({
    name: opts.name ?? 'webhook-fanout',
    level: opts.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: {
      paths: [
        'req.headers.authorization',
        'headers.authorization',
        '*.authSecret',
        '*.signingSecret',
        '*.password',
        '*.passwordHash',
      ],
      censor: '[redacted]',
    },
  });
}
