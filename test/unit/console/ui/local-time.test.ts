import { describe, expect, it } from 'vitest';
import { fromLocalInput, toLocalInput } from '../../../../src/console/ui/local-time.js';

describe("time filters: a datetime-local input's value and the API's RFC 3339 instants", () => {
  it.each(['2026-11-25T10:15:00.000Z', '2026-02-28T23:59:00.000Z', '2026-06-01T00:00:00.000Z'])('%s survives the input and back', (iso) => {
    const local = toLocalInput(iso);
    expect(local).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/);
    expect(fromLocalInput(local)).toBe(iso);
  });

  it.each([
    [undefined, ''],
    ['', ''],
    ['yesterday', ''],
  ])('toLocalInput(%j) is empty', (iso, expected) => {
    expect(toLocalInput(iso)).toBe(expected);
  });

  it.each(['', 'not a time'])('fromLocalInput(%j) is no filter', (value) => {
    expect(fromLocalInput(value)).toBeUndefined();
  });
});
