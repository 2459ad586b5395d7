import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '../../../src/api/cursor.js';
import { AppError } from '../../../src/domain/errors.js';

const ID = '0b5e6f7a-1c2d-4e3f-8a9b-0c1d2e3f4a5b';
const TS = '2026-02-03T04:05:06.123456Z';
const b64 = (s: string): string => Buffer.from(s).toString('base64url');

describe('page cursors', () => {
  it.each([[{ ts: TS, id: ID }], [{ ts: '1999-12-31T23:59:59.000000Z', id: ID.toUpperCase() }]])('round-trips %j', (after) => {
    const cursor = encodeCursor(after);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor ?? undefined)).toEqual(after);
  });

  it('no next page encodes as null; no cursor decodes as undefined', () => {
    expect(encodeCursor(null)).toBeNull();
    expect(decodeCursor(undefined)).toBeUndefined();
  });

  it.each([
    ['empty', ''],
    ['not base64url', 'abc+/='],
    ['no separator', b64(`${TS}${ID}`)],
    ['extra field', b64(`${TS}|${ID}|x`)],
    ['millisecond timestamp', b64(`2026-02-03T04:05:06.123Z|${ID}`)],
    ['timestamp with offset', b64(`2026-02-03T04:05:06.123456+01:00|${ID}`)],
    ['impossible date', b64(`2026-13-45T04:05:06.123456Z|${ID}`)],
    ['not a uuid', b64(`${TS}|1 or 1=1`)],
    ['SQL in the id', b64(`${TS}|${ID}'; drop table x;--`)],
    ['only a timestamp', b64(TS)],
  ])('rejects %s as a permanent invalid_cursor', (_what, cursor) => {
    let thrown: unknown;
    try {
      decodeCursor(cursor);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect(thrown).toMatchObject({ kind: 'permanent', code: 'invalid_cursor' });
  });
});
