import { describe, expect, it } from 'vitest';
import { desiredStatus, keyOf, parseKey, sameStatus, type Condition, type ResourceStatus } from '../../../src/operator/kube-objects.js';

const NOW = new Date('2026-05-01T10:00:00.789Z');
const EARLIER = '2026-04-01T09:00:00Z';
const ready = (status: 'True' | 'False', lastTransitionTime = EARLIER, extra: Partial<Condition> = {}): Condition => ({
  type: 'Ready',
  status,
  observedGeneration: 1,
  lastTransitionTime,
  reason: 'Old',
  message: 'old',
  ...extra,
});
const other: Condition = { type: 'Progressing', status: 'True', lastTransitionTime: EARLIER, reason: 'X', message: 'x' };

describe('desiredStatus', () => {
  it.each<[string, ResourceStatus | undefined, 'True' | 'False', string]>([
    ['first status: transition now', undefined, 'True', '2026-05-01T10:00:00Z'],
    ['Ready unchanged: keeps its transition time', { conditions: [ready('True')] }, 'True', EARLIER],
    ['Ready flips True -> False: transition now', { conditions: [ready('True')] }, 'False', '2026-05-01T10:00:00Z'],
    ['Ready flips False -> True: transition now', { conditions: [ready('False')] }, 'True', '2026-05-01T10:00:00Z'],
    ['only another condition before: transition now', { conditions: [other] }, 'False', '2026-05-01T10:00:00Z'],
  ])('%s', (_what, status, next, lastTransitionTime) => {
    const obj = { metadata: { generation: 4 }, ...(status ? { status } : {}) };
    const desired = desiredStatus(obj, { status: next, reason: 'Synced', message: 'in Postgres' }, {}, NOW);
    expect(desired.observedGeneration).toBe(4);
    expect(desired.conditions?.[0]).toEqual({
      type: 'Ready',
      status: next,
      observedGeneration: 4,
      lastTransitionTime,
      reason: 'Synced',
      message: 'in Postgres',
    });
  });

  it('keeps condition types it does not own, after Ready', () => {
    const desired = desiredStatus(
      { metadata: { generation: 1 }, status: { conditions: [other, ready('True')] } },
      { status: 'True', reason: 'R', message: 'm' },
      {},
      NOW,
    );
    expect(desired.conditions?.map((c) => c.type)).toEqual(['Ready', 'Progressing']);
    expect(desired.conditions?.[1]).toEqual(other);
  });

  it.each<[string, { endpointId?: string; credentialId?: string }, ResourceStatus]>([
    ['no ids', {}, {}],
    ['endpoint id', { endpointId: 'e1' }, { endpointId: 'e1' }],
    ['credential id', { credentialId: 'c1' }, { credentialId: 'c1' }],
  ])('carries %s', (_what, ids, expected) => {
    const desired = desiredStatus({ metadata: {} }, { status: 'True', reason: 'R', message: 'm' }, ids, NOW);
    expect({ endpointId: desired.endpointId, credentialId: desired.credentialId }).toEqual({
      endpointId: expected.endpointId,
      credentialId: expected.credentialId,
    });
    expect(desired.observedGeneration).toBe(0);
  });

  it.each(['ACTIVE', 'DISABLED'] as const)('carries the endpoint state %s (kubectl get whe shows it)', (state) => {
    const desired = desiredStatus({ metadata: {} }, { status: 'True', reason: 'R', message: 'm' }, { endpointId: 'e1', state }, NOW);
    expect(desired.state).toBe(state);
  });

  it('cuts the message to the 32 KiB a condition may hold', () => {
    const desired = desiredStatus({ metadata: {} }, { status: 'False', reason: 'R', message: 'x'.repeat(40_000) }, {}, NOW);
    expect(desired.conditions?.[0]?.message).toHaveLength(32_768);
  });
});

describe('sameStatus', () => {
  const base: ResourceStatus = { observedGeneration: 2, endpointId: 'e', conditions: [ready('True'), other] };
  it.each<[string, ResourceStatus | undefined, ResourceStatus, boolean]>([
    ['identical', base, base, true],
    ['conditions in another order', { ...base, conditions: [other, ready('True')] }, base, true],
    ['nothing before', undefined, base, false],
    ['another generation', { ...base, observedGeneration: 3 }, base, false],
    ['another message', { ...base, conditions: [ready('True', EARLIER, { message: 'new' }), other] }, base, false],
    ['another transition time', { ...base, conditions: [ready('True', '2026-01-01T00:00:00Z'), other] }, base, false],
    ['an id dropped', { observedGeneration: 2, conditions: base.conditions ?? [] }, base, false],
    ['the state changed (the endpoint was disabled)', { ...base, state: 'ACTIVE' }, { ...base, state: 'DISABLED' }, false],
    ['no state before, one now', base, { ...base, state: 'ACTIVE' }, false],
  ])('%s -> %s', (_what, a, b, same) => {
    expect(sameStatus(a, b)).toBe(same);
  });
});

describe('work-queue keys', () => {
  it.each([
    ['WebhookEndpoint', 'ns', 'name'],
    ['InboundCredential', 'team-a', 'with/slash'],
  ] as const)('%s/%s/%s round-trips', (kind, namespace, name) => {
    expect(parseKey(keyOf(kind, namespace, name))).toEqual({ kind, namespace, name });
  });

  it.each(['Secret/ns/name', 'WebhookEndpoint/ns', 'WebhookEndpoint//name', ''])('%j is refused', (key) => {
    expect(() => parseKey(key)).toThrow(/bad work-queue key/);
  });
});
