import { describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/domain/errors.js';
import { readCloudEvent } from '../../../src/ingest/cloudevents.js';

const BINARY = { 'ce-specversion': '1.0', 'ce-id': 'evt-1', 'ce-source': '/orders', 'ce-type': 'com.example.order.created' };
const ENVELOPE = { specversion: '1.0', id: 'evt-1', source: '/orders', type: 'com.example.order.created', data: { n: 1 } };
const STRUCTURED = 'application/cloudevents+json; charset=utf-8';

const without = <T extends Record<string, unknown>>(o: T, key: string): Record<string, unknown> =>
  Object.fromEntries(Object.entries(o).filter(([k]) => k !== key));

describe('readCloudEvent', () => {
  it.each<[string, string | null, Record<string, string>, unknown, { mode: string; id: string; type: string }]>([
    ['binary: the ce- headers', 'application/json', BINARY, { n: 1 }, { mode: 'binary', id: 'evt-1', type: 'com.example.order.created' }],
    ['binary: any body type, or none', null, BINARY, undefined, { mode: 'binary', id: 'evt-1', type: 'com.example.order.created' }],
    [
      'binary: percent-encoded values are decoded',
      'text/plain',
      { ...BINARY, 'ce-id': 'caf%C3%A9', 'ce-type': 'a%25b' },
      undefined,
      { mode: 'binary', id: 'café', type: 'a%b' },
    ],
    ['structured: the envelope', STRUCTURED, {}, ENVELOPE, { mode: 'structured', id: 'evt-1', type: 'com.example.order.created' }],
    [
      'structured: the envelope wins over stray ce- headers',
      'Application/CloudEvents+JSON',
      { ...BINARY, 'ce-id': 'other' },
      ENVELOPE,
      { mode: 'structured', id: 'evt-1', type: 'com.example.order.created' },
    ],
  ])('%s', (_name, contentType, headers, json, expected) => {
    expect(readCloudEvent(contentType, headers, json)).toEqual(expected);
  });

  it.each<[string, string | null, Record<string, string>, unknown, string]>([
    ['binary without ce-id', 'application/json', without(BINARY, 'ce-id') as Record<string, string>, {}, 'attribute "id" is missing'],
    ['binary without ce-source', 'application/json', without(BINARY, 'ce-source') as Record<string, string>, {}, '"source" is missing'],
    ['binary without ce-type', null, without(BINARY, 'ce-type') as Record<string, string>, undefined, 'header ce-type'],
    ['binary with an empty ce-type', null, { ...BINARY, 'ce-type': '' }, undefined, '"type" is missing'],
    ['plain JSON, no CloudEvent at all', 'application/json', {}, { id: 'x', type: 'y' }, '"specversion" is missing'],
    ['binary of another specversion', null, { ...BINARY, 'ce-specversion': '0.3' }, undefined, 'ce-specversion is "0.3"'],
    ['binary with broken percent-encoding', null, { ...BINARY, 'ce-id': '%E0%A4%A' }, undefined, 'header ce-id is not valid'],
    ['structured without source', STRUCTURED, {}, without(ENVELOPE, 'source'), 'attribute "source" is missing'],
    ['structured with a numeric id', STRUCTURED, {}, { ...ENVELOPE, id: 7 }, '"id" must be a non-empty string'],
    ['structured with a null type', STRUCTURED, {}, { ...ENVELOPE, type: null }, '"type" is missing'],
    ['structured of another specversion', STRUCTURED, {}, { ...ENVELOPE, specversion: '0.3' }, 'specversion is "0.3"'],
    ['structured that is an array', STRUCTURED, {}, [ENVELOPE], 'must be a JSON object'],
    ['batched mode', 'application/cloudevents-batch+json', {}, [ENVELOPE], 'batched mode'],
  ])('refused, naming why: %s', (_name, contentType, headers, json, words) => {
    let thrown: unknown;
    try {
      readCloudEvent(contentType, headers, json);
    } catch (err) {
      thrown = err;
    }
    expect(isAppError(thrown) && thrown.code).toBe('invalid_cloudevent');
    expect((thrown as Error).message).toContain(words);
    expect((thrown as Error).message).toMatch(/^not a valid CloudEvent: /);
  });
});
