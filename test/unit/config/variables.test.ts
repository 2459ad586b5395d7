import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  loadConsumerConfig,
  loadIngestConfig,
  loadMigrateConfig,
  loadOperatorConfig,
  loadTransportSetupConfig,
  loadWorkerConfig,
} from '../../../src/config/config.js';
import type { Env } from '../../../src/config/env-reader.js';
import { VARIABLES } from '../../../src/config/settings.js';
import { loadDevConfig } from '../../../src/dev/dev-config.js';
import { problemsOf } from '../../support/config-problems.js';

// Every loader with an environment that turns on all it can read.
const LOADERS: Array<[string, (env: Env) => unknown, Env]> = [
  [
    'ingest',
    loadIngestConfig,
    {
      DATABASE_URL: 'postgres://db/x',
      TOPIC_ARN: 'arn:aws:sns:us-east-1:0:t',
      AUTH_URL: 'https://idp',
      AUTH_AUDIENCE: 'a',
      CONSOLE_CLIENT_ID: 'spa',
    },
  ],
  ['consumer', loadConsumerConfig, { DATABASE_URL: 'postgres://db/x', QUEUE_URL: 'http://sqs/q' }],
  ['worker', loadWorkerConfig, { DATABASE_URL: 'postgres://db/x', QUEUE_URL: 'http://sqs/q', WORKER_CONSUME_QUEUE: 'true' }],
  ['operator', loadOperatorConfig, { DATABASE_URL: 'postgres://db/x' }],
  ['setup-transport', loadTransportSetupConfig, {}],
  ['migrate', loadMigrateConfig, { DATABASE_URL: 'postgres://db/x' }],
  ['dev', loadDevConfig, {}],
];

/** The problems every loader names with `env` over its own base. */
function problemsOfAll(env: Env): string[] {
  return LOADERS.flatMap(([, load, base]) => problemsOf(() => load({ ...base, ...env })));
}

const entries = Object.entries(VARIABLES);

describe('the table of variables (config/settings.ts)', () => {
  it('lists every variable a loader reads, and no other', () => {
    const read = new Set<string>();
    for (const [, load, base] of LOADERS) {
      const env = new Proxy(base, {
        get(target, name) {
          if (typeof name === 'string') read.add(name);
          return Reflect.get(target, name) as unknown;
        },
      });
      load(env);
    }
    expect([...read].sort()).toEqual(Object.keys(VARIABLES).sort());
  });

  it.each(entries.flatMap(([name, v]) => (v.type === 'integer' || v.type === 'number' ? [[name, v] as const] : [])))(
    '%s refuses a value over its maximum, naming its bounds',
    (name, v) => {
      const kind = v.type === 'integer' ? 'an integer' : 'a number';
      expect(problemsOfAll({ [name]: String(v.max + 1) })).toContain(
        `${name} must be ${kind} between ${v.min} and ${v.max}, got "${v.max + 1}"`,
      );
    },
  );

  it.each(entries.flatMap(([name, v]) => (v.type === 'enum' ? [[name, v] as const] : [])))(
    '%s refuses a value it does not list',
    (name, v) => {
      expect(problemsOfAll({ [name]: 'Nope' })).toContain(`${name} must be one of ${v.values.join(', ')}, got "Nope"`);
    },
  );

  it.each(entries.flatMap(([name, v]) => (v.type === 'boolean' ? [name] : [])))('%s refuses what is not true or false', (name) => {
    expect(problemsOfAll({ [name]: 'maybe' })).toContain(`${name} must be true or false, got "maybe"`);
  });
});

// The chart's values schema refuses a setting out of bounds before a pod starts; its bounds and
// its "default N" must be the table's.
describe("the chart's values schema and the table", () => {
  const schema: unknown = JSON.parse(readFileSync(new URL('../../../charts/webhook-fanout/values.schema.json', import.meta.url), 'utf8'));
  type Property = { minimum?: number; maximum?: number; description?: string };
  const settings: Array<[string, Property]> = [];
  const walk = (node: unknown): void => {
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (Object.hasOwn(VARIABLES, key) && typeof value === 'object' && value !== null && 'maximum' in value)
        settings.push([key, value as Property]);
      walk(value);
    }
  };
  walk(schema);

  it('names bounded settings (the walk finds them)', () => {
    expect(settings.length).toBeGreaterThan(10);
  });

  it.each(settings)('%s: the same bounds and default', (name, property) => {
    const v = VARIABLES[name as keyof typeof VARIABLES];
    expect(v.type === 'integer' || v.type === 'number').toBe(true);
    if (v.type !== 'integer' && v.type !== 'number') return;
    expect({ minimum: property.minimum, maximum: property.maximum }).toEqual({ minimum: v.min, maximum: v.max });
    expect(property.description).toMatch(new RegExp(`^default ${String(v.default)}(:|$)`));
  });
});
