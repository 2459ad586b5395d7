import { describe, expect, it } from 'vitest';
import type { ExtractionRule } from '../../../src/domain/records.js';
import { extractIdentity } from '../../../src/ingest/extract.js';

type Rules = { eventId: ExtractionRule | null; eventType: ExtractionRule | null };
const DEFAULTS: Rules = { eventId: null, eventType: null };

describe('extractIdentity', () => {
  it.each<[string, unknown, Record<string, string>, Rules, string | null, string | null]>([
    ['default: JSON id and type', { id: 'evt_1', type: 'a.b' }, {}, DEFAULTS, 'evt_1', 'a.b'],
    ['default: a numeric id becomes a string', { id: 42 }, {}, DEFAULTS, '42', null],
    ['default: JSON wins over headers', { id: 'j' }, { 'webhook-id': 'h', 'x-event-type': 't' }, DEFAULTS, 'j', 't'],
    ['default: Webhook-Id before X-Event-Id', {}, { 'webhook-id': 'w', 'x-event-id': 'x' }, DEFAULTS, 'w', null],
    ['default: X-Event-Id when nothing else', {}, { 'x-event-id': 'x' }, DEFAULTS, 'x', null],
    ['default: a non-JSON body uses headers only', undefined, { 'webhook-id': 'w', 'x-event-type': 't' }, DEFAULTS, 'w', 't'],
    ['default: empty strings do not count', { id: '', type: '' }, { 'webhook-id': '', 'x-event-id': 'x' }, DEFAULTS, 'x', null],
    ['default: non-finite, boolean, object ids do not count', { id: true, type: { a: 1 } }, {}, DEFAULTS, null, null],
    ['default: a JSON array body has no fields', [{ id: 'a' }], {}, DEFAULTS, null, null],
    ['default: a JSON null body', null, {}, DEFAULTS, null, null],
    [
      'rule: nested jsonPath',
      { data: { object: { id: 'obj_9' } }, id: 'top' },
      {},
      { eventId: { jsonPath: 'data.object.id' }, eventType: null },
      'obj_9',
      null,
    ],
    [
      'rule: a path through an array does not match',
      { data: [{ id: 'x' }] },
      {},
      { eventId: { jsonPath: 'data.0.id' }, eventType: null },
      null,
      null,
    ],
    [
      'rule: a missing path gives null, no fallback to the defaults',
      { id: 'top' },
      { 'webhook-id': 'w' },
      { eventId: { jsonPath: 'nope' }, eventType: null },
      null,
      null,
    ],
    [
      'rule: header, matched case-insensitively',
      {},
      { 'x-github-delivery': 'gh-1', 'x-github-event': 'push' },
      { eventId: { header: 'X-GitHub-Delivery' }, eventType: { header: 'X-GitHub-Event' } },
      'gh-1',
      'push',
    ],
    [
      'rule: jsonPath then header in one rule',
      {},
      { 'x-id': 'h' },
      { eventId: { jsonPath: 'id', header: 'x-id' }, eventType: null },
      'h',
      null,
    ],
    [
      'rule: only the type rule set, the id keeps its defaults',
      { id: 'i', kind: 'k', type: 'ignored' },
      {},
      { eventId: null, eventType: { jsonPath: 'kind' } },
      'i',
      'k',
    ],
  ])('%s', (_what, json, headers, rules, externalEventId, eventType) => {
    expect(extractIdentity(json, headers, rules)).toEqual({ externalEventId, eventType });
  });
});
