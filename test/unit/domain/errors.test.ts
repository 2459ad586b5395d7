import { describe, expect, it } from 'vitest';
import { AppError, describeError, internal, isAppError, permanent, transient } from '../../../src/domain/errors.js';

describe('describeError', () => {
  it.each<[string, unknown, string]>([
    ['an Error', new Error('boom'), 'boom'],
    ['an Error with an Error cause', new Error('could not sync', { cause: new Error('ECONNRESET') }), 'could not sync: ECONNRESET'],
    ['a non-Error cause is left out', new Error('x', { cause: 'secret-ish detail' }), 'x'],
    ['whitespace collapsed to one line', new Error('a\n  b\tc'), 'a b c'],
    ['knex insert: the SQL text dropped, the reason kept',
      new Error('insert into "webhook_event" ("payload") values ($1) returning * - duplicate key value violates unique constraint'),
      'duplicate key value violates unique constraint'],
    ['knex multi-line select', new Error('select *\nfrom "t"\nwhere "a" = $1 - relation "t" does not exist'), 'relation "t" does not exist'],
    ['a message that only looks like SQL is kept', new Error('selected endpoint is gone'), 'selected endpoint is gone'],
    ['a thrown string', 'plain\nstring', 'plain string'],
    ['a thrown number', 42, '42'],
    ['undefined', undefined, 'undefined'],
  ])('%s', (_what, err, expected) => {
    expect(describeError(err)).toBe(expected);
  });

  it('never exceeds 500 characters', () => {
    expect(describeError(new Error('x'.repeat(2_000)))).toHaveLength(500);
    expect(describeError('y'.repeat(2_000))).toHaveLength(500);
  });
});

describe('AppError kinds', () => {
  it.each([
    ['permanent', permanent('bad_input', 'm'), 'permanent', 'bad_input'],
    ['transient', transient('db_down', 'm'), 'transient', 'db_down'],
    ['internal', internal('bug', 'm'), 'internal', 'bug'],
  ] as const)('%s() carries its kind and code', (_what, err, kind, code) => {
    expect(err).toBeInstanceOf(AppError);
    expect(isAppError(err)).toBe(true);
    expect(err).toMatchObject({ kind, code, message: 'm' });
  });

  it('a plain Error is not an AppError', () => {
    expect(isAppError(new Error('x'))).toBe(false);
  });
});
