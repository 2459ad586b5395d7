import type { PageAfter } from '../db/admin-queries.js';
import { permanent } from '../domain/errors.js';
import { isRepresentableDateTime } from './validation.js';

// A page cursor is opaque to clients: base64url of the last row's (timestamp, id). Nothing in it
// is trusted: it is parsed back strictly and only ever reaches SQL as bound parameters.

const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function encodeCursor(after: PageAfter | null): string | null {
  return after === null ? null : Buffer.from(`${after.ts}|${after.id}`).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): PageAfter | undefined {
  if (cursor === undefined) return undefined;
  const invalid = permanent('invalid_cursor', 'cursor is not one this API returned');
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid;
  const [ts, id, ...rest] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (ts === undefined || id === undefined || rest.length > 0 || !TS.test(ts) || !UUID.test(id)) throw invalid;
  // February 30th, year 0 or a leap second would reach Postgres as an invalid date
  if (!isRepresentableDateTime(ts)) throw invalid;
  return { ts, id };
}
