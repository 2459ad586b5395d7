import { describe, expect, it } from 'vitest';
import type { AllowedEndpoints, LabelSelector } from '../../../src/domain/records.js';
import { endpointAllowance, selectorMatches, type SourceOwner } from '../../../src/custom-resources/allowed-endpoints.js';

// metav1.LabelSelector's meaning, as kube-apiserver applies it to Namespaces.
describe('selectorMatches', () => {
  const labels = { team: 'orders', tier: 'prod', 'kubernetes.io/metadata.name': 'orders' };
  it.each<[string, LabelSelector, boolean]>([
    ['an empty selector matches everything', {}, true],
    ['matchLabels, all equal', { matchLabels: { team: 'orders', tier: 'prod' } }, true],
    ['matchLabels, a value differs', { matchLabels: { team: 'orders', tier: 'dev' } }, false],
    ['matchLabels, a key absent', { matchLabels: { reader: 'true' } }, false],
    ['matchLabels by the name label', { matchLabels: { 'kubernetes.io/metadata.name': 'orders' } }, true],
    ['In, the value listed', { matchExpressions: [{ key: 'tier', operator: 'In', values: ['dev', 'prod'] }] }, true],
    ['In, the value not listed', { matchExpressions: [{ key: 'tier', operator: 'In', values: ['dev'] }] }, false],
    ['In, the key absent', { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }, false],
    ['NotIn, the value listed', { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['prod'] }] }, false],
    ['NotIn, the key absent matches', { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }, true],
    ['Exists', { matchExpressions: [{ key: 'team', operator: 'Exists' }] }, true],
    ['Exists, absent', { matchExpressions: [{ key: 'zone', operator: 'Exists' }] }, false],
    ['DoesNotExist, absent', { matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] }, true],
    ['DoesNotExist, present', { matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] }, false],
    [
      'matchLabels and expressions must all hold',
      { matchLabels: { team: 'orders' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['dev'] }] },
      false,
    ],
  ])('%s', (_what, selector, expected) => {
    expect(selectorMatches(selector, labels)).toBe(expected);
  });
});

describe('endpointAllowance', () => {
  const owner = (allowedEndpoints: AllowedEndpoints | null, namespace: string | null = 'payments'): SourceOwner => ({
    source: 'pay',
    namespace,
    resourceName: namespace === null ? null : `${namespace}/pay`,
    allowedEndpoints,
  });
  const reader = { matchLabels: { 'webhooks.example.com/reader': 'true' } };
  const readerLabels = { 'webhooks.example.com/reader': 'true', 'kubernetes.io/metadata.name': 'orders' };

  it.each<[string, SourceOwner | undefined, string, Record<string, string> | undefined, 'Same' | 'All', string | null]>([
    ['no credential: SourceNotFound', undefined, 'payments', undefined, 'Same', 'SourceNotFound'],
    ['no credential, whatever the default', undefined, 'payments', undefined, 'All', 'SourceNotFound'],
    ['the default Same, the same namespace', owner(null), 'payments', undefined, 'Same', null],
    ['the default Same, another namespace', owner(null), 'intruder', undefined, 'Same', 'NotAllowedBySource'],
    ['the default All, another namespace', owner(null), 'intruder', undefined, 'All', null],
    ['allowedEndpoints without namespaces: the default', owner({}), 'intruder', undefined, 'Same', 'NotAllowedBySource'],
    ['from Same wins over the default All', owner({ namespaces: { from: 'Same' } }), 'intruder', undefined, 'All', 'NotAllowedBySource'],
    ['from All', owner({ namespaces: { from: 'All' } }), 'intruder', undefined, 'Same', null],
    ['Selector, labels match', owner({ namespaces: { from: 'Selector', selector: reader } }), 'orders', readerLabels, 'Same', null],
    [
      'Selector, labels unknown',
      owner({ namespaces: { from: 'Selector', selector: reader } }),
      'orders',
      undefined,
      'Same',
      'NotAllowedBySource',
    ],
    [
      'Selector does not imply its own namespace',
      owner({ namespaces: { from: 'Selector', selector: reader } }),
      'payments',
      { 'kubernetes.io/metadata.name': 'payments' },
      'All',
      'NotAllowedBySource',
    ],
    [
      'Selector by name, labels unknown: the name label is assumed',
      owner({ namespaces: { from: 'Selector', selector: { matchLabels: { 'kubernetes.io/metadata.name': 'orders' } } } }),
      'orders',
      undefined,
      'Same',
      null,
    ],
    [
      'a Selector without a selector selects nothing',
      owner({ namespaces: { from: 'Selector' } }),
      'orders',
      readerLabels,
      'Same',
      'NotAllowedBySource',
    ],
    ['a row without a namespace (by hand, before tenancy) restricts nothing', owner(null, null), 'intruder', undefined, 'Same', null],
  ])('%s', (_what, o, namespace, namespaceLabels, defaultFrom, expected) => {
    expect(endpointAllowance({ source: 'pay', namespace, namespaceLabels, owner: o, defaultFrom }).deniedReason).toBe(expected);
  });

  it('says who decided, what it allows and where the endpoint is', () => {
    const same = endpointAllowance({ source: 'pay', namespace: 'intruder', owner: owner(null), defaultFrom: 'Same' });
    expect(same).toEqual({
      deniedReason: 'NotAllowedBySource',
      message:
        'InboundCredential payments/pay of source "pay" allows endpoints in its own namespace payments only (it sets no ' +
        "spec.allowedEndpoints, and the installation's default is Same); this endpoint is in namespace intruder: nothing is routed to this endpoint",
    });
    const selector = endpointAllowance({
      source: 'pay',
      namespace: 'intruder',
      owner: owner({ namespaces: { from: 'Selector', selector: reader } }),
      defaultFrom: 'Same',
    });
    expect(selector).toMatchObject({
      message: expect.stringMatching(/spec\.allowedEndpoints\.namespaces\.from: Selector\); the labels of namespace intruder do not match/),
    });
    expect(endpointAllowance({ source: 'pay', namespace: 'x', owner: undefined, defaultFrom: 'Same' })).toEqual({
      deniedReason: 'SourceNotFound',
      message: 'source "pay" has no InboundCredential in effect: nothing is routed to this endpoint until one is Ready',
    });
  });
});
