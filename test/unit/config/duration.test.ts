import { describe, expect, it } from 'vitest';
import { DURATION_PATTERN, formatDuration, parseDuration } from '../../../src/config/duration.js';

describe('retention ages: a whole number and one unit', () => {
  it.each([
    { text: '90d', seconds: 90 * 86_400 },
    { text: '36h', seconds: 36 * 3_600 },
    { text: '30m', seconds: 1_800 },
    { text: '45s', seconds: 45 },
    { text: ' 7d ', seconds: 7 * 86_400 },
    { text: '999999d', seconds: 999_999 * 86_400 },
  ])('$text = $seconds s, and the CRD/chart pattern accepts it', ({ text, seconds }) => {
    expect(parseDuration(text)).toEqual({ seconds });
    expect(new RegExp(DURATION_PATTERN).test(text.trim())).toBe(true);
  });

  it.each(['', '0d', '90', 'd', '1.5h', '90 d', '-1d', '1w', '1y', '90D', '1d12h', '07d', '1000000d', 'forever'])(
    '"%s" is refused by the parser and the pattern alike, with what is expected',
    (text) => {
      const r = parseDuration(text);
      expect(r).toHaveProperty('problem');
      if ('problem' in r) expect(r.problem).toMatch(/such as 90d, 36h, 30m or 45s/);
      expect(new RegExp(DURATION_PATTERN).test(text)).toBe(false);
    },
  );

  it.each([
    { seconds: 90 * 86_400, text: '90d' },
    { seconds: 36 * 3_600, text: '36h' },
    { seconds: 90, text: '90s' },
    { seconds: 120, text: '2m' },
  ])('formats $seconds as $text', ({ seconds, text }) => {
    expect(formatDuration(seconds)).toBe(text);
  });
});
