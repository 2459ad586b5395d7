import { describe, expect, it } from 'vitest';
import { DEFAULT_DELETE_LINGER_MS, MAX_DELETE_LINGER_MS, deleteLingerFor } from '../../src/transport/message-deleter.js';

describe('deleteLingerFor', () => {
  it('waits at most a quarter of the visibility timeout, so a lingering delete never lets the message reappear', () => {
    expect(deleteLingerFor(30)).toBe(MAX_DELETE_LINGER_MS);
    expect(deleteLingerFor(1)).toBe(250);
    expect(deleteLingerFor(2)).toBeLessThan(2_000);
  });

  it('keeps the short default when the visibility timeout is the queue’s own (unknown)', () => {
    expect(deleteLingerFor(undefined)).toBe(DEFAULT_DELETE_LINGER_MS);
  });
});
