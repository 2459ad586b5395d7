import { describe, expect, it } from 'vitest';
import { graceWarning } from '../../../src/retention/retention-job.js';

describe('graceWarning: what the job says at start when an age is shorter than RETENTION_SETTLED_GRACE', () => {
  it.each([
    { name: 'retention off', settings: { maxAgeSeconds: null, payloadMaxAgeSeconds: null, settledGraceSeconds: 900 }, warning: null },
    {
      name: 'ages of days, the default grace',
      settings: { maxAgeSeconds: 90 * 86_400, payloadMaxAgeSeconds: 86_400, settledGraceSeconds: 900 },
      warning: null,
    },
    {
      name: 'an age equal to the grace',
      settings: { maxAgeSeconds: 900, payloadMaxAgeSeconds: null, settledGraceSeconds: 900 },
      warning: null,
    },
    {
      name: "the README's 45s under the default grace",
      settings: { maxAgeSeconds: 45, payloadMaxAgeSeconds: 10, settledGraceSeconds: 900 },
      warning:
        'RETENTION_MAX_AGE (45s) and RETENTION_PAYLOAD_MAX_AGE (10s) shorter than RETENTION_SETTLED_GRACE (15m): an event is dropped or deleted no sooner than 15m after its last change (its receipt, a delivery, a replay); set RETENTION_SETTLED_GRACE lower to see short ages at work',
    },
    {
      name: 'only the payload age short',
      settings: { maxAgeSeconds: 86_400, payloadMaxAgeSeconds: 600, settledGraceSeconds: 900 },
      warning: expect.stringMatching(/^RETENTION_PAYLOAD_MAX_AGE \(10m\) shorter than RETENTION_SETTLED_GRACE \(15m\)/),
    },
    {
      name: 'short ages with a shorter grace',
      settings: { maxAgeSeconds: 45, payloadMaxAgeSeconds: 10, settledGraceSeconds: 5 },
      warning: null,
    },
  ])('$name', ({ settings, warning }) => {
    expect(graceWarning(settings)).toEqual(warning);
  });
});
