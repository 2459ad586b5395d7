import pino, { type Logger } from 'pino';
import { VARIABLES } from '../config/settings.js';

export type { Logger };

let warningsRouted = false;

/**
 * Node prints process warnings (pg's deprecations, MaxListeners...) to stderr as plain text, in
 * the middle of the JSON log stream: they become warn lines of this logger instead.
 */
export function routeProcessWarnings(logger: Logger): void {
  if (warningsRouted) return;
  warningsRouted = true;
  process.removeAllListeners('warning');
  process.on('warning', (w: Error & { code?: string }) => logger.warn({ component: 'node', warning: w.name, code: w.code }, w.message));
}

/** One JSON line at fatal level, for failures before (or without) a logger: start-up errors. */
export function fatalLine(msg: string, fields: Record<string, unknown> = {}): string {
  return `${JSON.stringify({ level: 60, time: Date.now(), pid: process.pid, name: 'webhook-fanout', ...fields, msg })}\n`;
}

/** JSON logs to stdout; credentials never reach them (redacted by path as a second line of defence). */
export function createLogger(opts: { level?: string; name?: string } = {}): Logger {
  return pino({
    name: opts.name ?? 'webhook-fanout',
    level: opts.level ?? process.env.LOG_LEVEL ?? VARIABLES.LOG_LEVEL.default,
    redact: {
      paths: [
        'req.headers.authorization',
        'headers.authorization',
        '*.authSecret',
        '*.signingSecret',
        '*.previousSigningSecret',
        // an outbound request's auth and signing (delivery/types.ts)
        'auth.secret',
        '*.auth.secret',
        'signing.secret',
        'signing.previousSecret',
        '*.signing.secret',
        '*.signing.previousSecret',
        '*.password',
        '*.passwordHash',
        'verification.secrets',
        '*.verification.secrets',
      ],
      censor: '[redacted]',
    },
  });
}
