import { Writable } from 'node:stream';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { describe, expect, it } from 'vitest';
import { LazyRequestLogger } from '../../../src/http/request-logger.js';

/** A pino logger as the service configures redaction, its lines collected, and how many children it made. */
function parent(level = 'info') {
  const lines: Array<Record<string, unknown>> = [];
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino({ level, redact: { paths: ['headers.authorization'], censor: '[redacted]' } }, out);
  let children = 0;
  // a view of the logger that counts the children made through it (its children are pino's own)
  const counted = Object.create(logger) as typeof logger;
  counted.child = ((...args: Parameters<typeof logger.child>) => {
    children++;
    return logger.child(...args);
  }) as typeof logger.child;
  return { logger: counted as unknown as FastifyBaseLogger, lines, children: () => children };
}

describe('LazyRequestLogger: the request logger fastify makes, made on its first line', () => {
  it('makes no child while the request does not log, and reads the level without one', () => {
    const p = parent('warn');
    const log = new LazyRequestLogger(p.logger, { reqId: 'r-1' }, {});
    expect(log.level).toBe('warn');
    expect(new LazyRequestLogger(p.logger, { reqId: 'r-2' }, { level: 'debug' }).level).toBe('debug');
    expect(p.children()).toBe(0);
  });

  it.each(['fatal', 'error', 'warn', 'info'] as const)('%s: one child, the line with the request id and redaction as before', (level) => {
    const p = parent();
    const log = new LazyRequestLogger(p.logger, { reqId: 'r-1' }, {});
    log[level]({ headers: { authorization: 'Basic c2VjcmV0' } }, 'first');
    log[level]('second %s', 'line');
    expect(p.children()).toBe(1);
    expect(p.lines.map((l) => [l.reqId, l.msg, l.headers])).toEqual([
      ['r-1', 'first', { authorization: '[redacted]' }],
      ['r-1', 'second line', undefined],
    ]);
  });

  it('keeps what the level hides hidden, and a child of it carries both bindings', () => {
    const p = parent('info');
    const log = new LazyRequestLogger(p.logger, { reqId: 'r-1' }, {});
    log.debug('hidden');
    log.trace('hidden');
    log.child({ component: 'x' }).info('shown');
    expect(p.lines.map((l) => [l.reqId, l.component, l.msg])).toEqual([['r-1', 'x', 'shown']]);
  });

  it('a level set on it applies to its lines', () => {
    const p = parent('info');
    const log = new LazyRequestLogger(p.logger, { reqId: 'r-1' }, {});
    log.level = 'debug';
    log.debug('now shown');
    expect(p.lines.map((l) => l.msg)).toEqual(['now shown']);
  });
});
