import { describe, expect, it } from 'vitest';
import { replayRuleProblem, type WebhookReplaySpec } from '../../../src/custom-resources/specs.js';

// What each action of a WebhookReplay takes, as dev mode checks it (the CRD states the same rules
// in CEL: test/operator/webhook-replay-skip.test.ts applies them to a kube-apiserver).

const window = { from: '2026-11-27T08:00:00Z', to: '2026-11-27T09:00:00Z' };
const replay: WebhookReplaySpec = { endpointRef: { name: 'orders' }, window, statuses: ['FAILED'], dryRun: false };
const deliveryId = '0b0c9a52-8f4e-4c3e-9a51-6a3f0e1f2d3c';
// as dev mode reads it: the schema's defaults filled in
const skip: WebhookReplaySpec = { action: 'Skip', deliveryId, statuses: ['FAILED'], dryRun: false };

describe('WebhookReplay spec rules', () => {
  it.each<{ name: string; spec: WebhookReplaySpec; problem: string | undefined }>([
    { name: 'a replay of a window', spec: replay, problem: undefined },
    { name: 'a replay, action given', spec: { ...replay, action: 'Replay' }, problem: undefined },
    { name: 'a skip of one delivery', spec: skip, problem: undefined },
    {
      name: 'a replay without a window',
      spec: { endpointRef: { name: 'orders' } },
      problem: 'spec: endpointRef and window are required with action Replay (the default)',
    },
    {
      name: 'a replay naming a delivery',
      spec: { ...replay, deliveryId },
      problem: 'spec: deliveryId is only used with action Skip',
    },
    {
      name: 'a skip without a delivery',
      spec: { action: 'Skip' },
      problem: 'spec: deliveryId is required with action Skip: the id of the FAILED delivery that holds its key',
    },
    ...(['endpointRef', 'window', 'eventTypes', 'dryRun', 'statuses'] as const).map((field) => ({
      name: `a skip with ${field}`,
      spec: {
        ...skip,
        ...{
          endpointRef: { endpointRef: { name: 'orders' } },
          window: { window },
          eventTypes: { eventTypes: ['a'] },
          dryRun: { dryRun: true },
          statuses: { statuses: ['SUCCESS' as const] },
        }[field],
      },
      problem:
        'spec: endpointRef, window, eventTypes, dryRun and statuses are not used with action Skip: it skips the one delivery deliveryId names',
    })),
    {
      name: 'a window that ends before it begins',
      spec: { ...replay, window: { from: window.to, to: window.from } },
      problem: 'spec.window.to: window.from must be before window.to',
    },
  ])('$name', ({ spec, problem }) => {
    expect(replayRuleProblem(spec)).toBe(problem);
  });
});
