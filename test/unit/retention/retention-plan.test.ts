import { describe, expect, it } from 'vitest';
import { retentionPlan } from '../../../src/retention/retention-job.js';

const D = 86_400;

describe("retentionPlan: the passes of a run from the global ages and the sources' own", () => {
  it.each([
    { name: 'nothing set: no pass (keep forever)', settings: { maxAgeSeconds: null, payloadMaxAgeSeconds: null }, overrides: [], plan: [] },
    {
      name: 'global ages only: a delete pass, then a payload pass, over every source',
      settings: { maxAgeSeconds: 90 * D, payloadMaxAgeSeconds: 7 * D },
      overrides: [],
      plan: [
        { kind: 'delete', scope: { exceptSources: [] }, ageSeconds: 90 * D },
        { kind: 'payload', scope: { exceptSources: [] }, ageSeconds: 7 * D },
      ],
    },
    {
      name: 'a source kept forever (0) is left out of the global pass and gets none of its own',
      settings: { maxAgeSeconds: 90 * D, payloadMaxAgeSeconds: null },
      overrides: [{ source: 'audit', maxAgeSeconds: 0, payloadMaxAgeSeconds: null }],
      plan: [{ kind: 'delete', scope: { exceptSources: ['audit'] }, ageSeconds: 90 * D }],
    },
    {
      name: 'a source with its own ages with no global age: only its passes',
      settings: { maxAgeSeconds: null, payloadMaxAgeSeconds: null },
      overrides: [{ source: 'chatty', maxAgeSeconds: 2 * D, payloadMaxAgeSeconds: 1 * D }],
      plan: [
        { kind: 'delete', scope: { source: 'chatty' }, ageSeconds: 2 * D },
        { kind: 'payload', scope: { source: 'chatty' }, ageSeconds: 1 * D },
      ],
    },
    {
      name: 'an override of the payload age only keeps the global delete age for that source',
      settings: { maxAgeSeconds: 30 * D, payloadMaxAgeSeconds: 7 * D },
      overrides: [{ source: 'pii', maxAgeSeconds: null, payloadMaxAgeSeconds: 3600 }],
      plan: [
        { kind: 'delete', scope: { exceptSources: [] }, ageSeconds: 30 * D },
        { kind: 'payload', scope: { exceptSources: ['pii'] }, ageSeconds: 7 * D },
        { kind: 'payload', scope: { source: 'pii' }, ageSeconds: 3600 },
      ],
    },
  ] as const)('$name', ({ settings, overrides, plan }) => {
    expect(retentionPlan(settings, overrides)).toEqual(plan);
  });
});
