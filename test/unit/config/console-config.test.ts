import { describe, expect, it } from 'vitest';
import { consoleStatus, loadIngestConfig, type ConsoleConfig } from '../../../src/config/config.js';
import { loadDevConfig } from '../../../src/dev/dev-config.js';
import { problemsOf } from '../../support/config-problems.js';
import { ConfigError } from '../../../src/config/env-reader.js';

const base = { DATABASE_URL: 'postgres://u:p@db:5432/webhooks', TOPIC_ARN: 'arn:aws:sns:us-east-1:000000000000:t' };
const auth = { AUTH_URL: 'https://tenant.eu.auth0.com', AUTH_AUDIENCE: 'https://api.example.com' };

/** The console's configuration, or the problems named for env. */
function load(env: Readonly<Record<string, string | undefined>>): { console: ConsoleConfig | null } | { problems: string[] } {
  try {
    return { console: loadIngestConfig({ ...base, ...env }).console };
  } catch (err) {
    if (err instanceof ConfigError) return { problems: err.problems };
    throw err;
  }
}

describe('the console configuration (CONSOLE_ENABLED, CONSOLE_CLIENT_ID, CONSOLE_AUTH_FLOW)', () => {
  it.each([
    {
      name: 'on with the admin API once its client id is set, implicit flow',
      env: { ...auth, CONSOLE_CLIENT_ID: 'spa-1' },
      console: { clientId: 'spa-1', authFlow: 'implicit' },
    },
    // a configuration from before the console: starts as it did, the console off
    { name: 'off with the admin API while no client id is set', env: auth, console: null },
    { name: 'off, asked for, without the admin API', env: { ADMIN_API_ENABLED: 'false', CONSOLE_CLIENT_ID: 'spa-1' }, console: null },
    {
      name: 'asked for explicitly, with its client id',
      env: { ...auth, CONSOLE_ENABLED: 'true', CONSOLE_CLIENT_ID: 'spa-1' },
      console: { clientId: 'spa-1', authFlow: 'implicit' },
    },
    { name: 'switched off with a client id', env: { ...auth, CONSOLE_ENABLED: 'false', CONSOLE_CLIENT_ID: 'spa-1' }, console: null },
    {
      name: 'the code flow with PKCE',
      env: { ...auth, CONSOLE_CLIENT_ID: 'spa-1', CONSOLE_AUTH_FLOW: 'code' },
      console: { clientId: 'spa-1', authFlow: 'code' },
    },
    { name: 'switched off', env: { ...auth, CONSOLE_ENABLED: 'false' }, console: null },
    { name: 'off with the admin API when not asked for', env: { ADMIN_API_ENABLED: 'false' }, console: null },
  ])('$name', ({ env, console }) => {
    expect(load(env)).toEqual({ console });
  });

  it.each([
    {
      name: 'CONSOLE_ENABLED=true without a client id',
      env: { ...auth, CONSOLE_ENABLED: 'true' },
      problem: /CONSOLE_CLIENT_ID .* is required while the console is on \(set CONSOLE_ENABLED=false/,
    },
    {
      name: 'console asked for without the admin API',
      env: { ADMIN_API_ENABLED: 'false', CONSOLE_ENABLED: 'true' },
      problem: /CONSOLE_ENABLED=true needs the admin API/,
    },
    {
      name: 'unknown flow',
      env: { ...auth, CONSOLE_CLIENT_ID: 'spa', CONSOLE_AUTH_FLOW: 'hybrid' },
      problem: /CONSOLE_AUTH_FLOW must be one of implicit, code, got "hybrid"/,
    },
    {
      name: 'client id with a space',
      env: { ...auth, CONSOLE_CLIENT_ID: 'a b' },
      problem: /CONSOLE_CLIENT_ID must be 1 to 200 printable ASCII/,
    },
    {
      name: 'not a boolean',
      env: { ...auth, CONSOLE_CLIENT_ID: 'spa', CONSOLE_ENABLED: 'sure' },
      problem: /CONSOLE_ENABLED must be true or false/,
    },
  ])('names the problem: $name', ({ env, problem }) => {
    const out = load(env);
    expect(out).toHaveProperty('problems');
    expect((out as { problems: string[] }).problems.some((p) => problem.test(p))).toBe(true);
  });

  it('names every problem at once, the console beside the admin API', () => {
    const out = load({ CONSOLE_ENABLED: 'true', CONSOLE_AUTH_FLOW: 'token' }) as { problems: string[] };
    expect(out.problems.filter((p) => /^(AUTH_URL|AUTH_AUDIENCE|CONSOLE_CLIENT_ID|CONSOLE_AUTH_FLOW)\b/.test(p))).toHaveLength(4);
  });
});

describe("dev mode's console user (WEBHOOK_FANOUT_DEV_USER, WEBHOOK_FANOUT_DEV_PASSWORD)", () => {
  const devProblems = (env: Readonly<Record<string, string | undefined>>): string[] => problemsOf(() => loadDevConfig(env));

  it.each([
    { env: {}, user: { username: undefined, password: undefined } },
    {
      env: { WEBHOOK_FANOUT_DEV_USER: 'alice', WEBHOOK_FANOUT_DEV_PASSWORD: 'correct horse' },
      user: { username: 'alice', password: 'correct horse' },
    },
  ])('$env', ({ env, user }) => {
    expect(loadDevConfig(env).devIdentityProvider?.user).toEqual(user);
  });

  it.each([
    { env: { WEBHOOK_FANOUT_DEV_USER: 'al ice' }, problem: /WEBHOOK_FANOUT_DEV_USER must be 1 to 64 printable ASCII/ },
    { env: { WEBHOOK_FANOUT_DEV_USER: 'dev-readonly' }, problem: /must not be dev-readonly/ },
    { env: { WEBHOOK_FANOUT_DEV_PASSWORD: 'x'.repeat(201) }, problem: /WEBHOOK_FANOUT_DEV_PASSWORD must be at most 200/ },
  ])('names the problem: $problem', ({ env, problem }) => {
    expect(devProblems(env).some((p) => problem.test(p))).toBe(true);
  });
});

describe("consoleStatus: what ingest's start line says of the console", () => {
  it.each([
    {
      name: 'on',
      env: { ...auth, CONSOLE_CLIENT_ID: 'spa-1' },
      line: 'console on at /console/ (client spa-1, implicit flow)',
    },
    {
      name: 'off for want of a client id: how to turn it on',
      env: auth,
      line: 'console off: to turn it on, register it at the identity provider as a single-page application (callback {origin}/console/callback) and set CONSOLE_CLIENT_ID to its client id (chart: console.clientId; docs/console.md)',
    },
    {
      name: 'switched off',
      env: { ...auth, CONSOLE_ENABLED: 'false', CONSOLE_CLIENT_ID: 'spa-1' },
      line: 'console off (CONSOLE_ENABLED=false)',
    },
    { name: 'no admin API', env: { ADMIN_API_ENABLED: 'false' }, line: 'console off (it needs the admin API, ADMIN_API_ENABLED=false)' },
  ])('$name', ({ env, line }) => {
    const full = { ...base, ...env };
    expect(consoleStatus(loadIngestConfig(full), full)).toBe(line);
  });
});
