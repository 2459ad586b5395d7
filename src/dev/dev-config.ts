import { createEnvReader, type Env, type EnvReader } from '../config/env-reader.js';
import type { DefaultAllowedNamespaces } from '../config/settings.js';
import { DEV_READONLY_USER, DEV_TENANT_USER } from './dev-idp.js';

/**
 * `webhook-fanout dev`: what dev mode itself decides from the environment, before it starts
 * anything. The processes it runs read theirs with config's loaders, from the environment with
 * dev mode's overlay (dev-environment.ts).
 */
export interface DevConfig {
  /** WEBHOOK_FANOUT_CONFIG_DIR / WEBHOOK_FANOUT_DATA_DIR; the --config-dir / --data-dir flags win */
  configDir: string | undefined;
  dataDir: string | undefined;
  /** TENANCY_DEFAULT_ALLOWED_NAMESPACES, as the operator's (docs/tenancy.md) */
  defaultAllowedNamespaces: DefaultAllowedNamespaces;
  /** each one set replaces the embedded dependency */
  external: { databaseUrl: string | undefined; temporalAddress: string | undefined; awsEndpoint: string | undefined };
  /** the local identity provider the admin API trusts; null with AUTH_URL set or the admin API disabled */
  devIdentityProvider: {
    port: number | undefined;
    audience: string | undefined;
    /** WEBHOOK_FANOUT_DEV_USER / WEBHOOK_FANOUT_DEV_PASSWORD: the console's dev user with both permissions */
    user: { username: string | undefined; password: string | undefined };
  } | null;
}

function devUser(r: EnvReader): { username: string | undefined; password: string | undefined } {
  const username = r.optional('WEBHOOK_FANOUT_DEV_USER');
  const password = r.optional('WEBHOOK_FANOUT_DEV_PASSWORD');
  if (username !== undefined && !/^[\x21-\x7e]{1,64}$/.test(username))
    r.problems.push('WEBHOOK_FANOUT_DEV_USER must be 1 to 64 printable ASCII characters without spaces');
  if (username === DEV_READONLY_USER.username)
    r.problems.push(`WEBHOOK_FANOUT_DEV_USER must not be ${DEV_READONLY_USER.username}, the read-only dev user`);
  if (username === DEV_TENANT_USER.username)
    r.problems.push(`WEBHOOK_FANOUT_DEV_USER must not be ${DEV_TENANT_USER.username}, the dev user scoped to a namespace`);
  if (password !== undefined && password.length > 200) r.problems.push('WEBHOOK_FANOUT_DEV_PASSWORD must be at most 200 characters');
  return { username, password };
}

export function loadDevConfig(env: Env): DevConfig {
  const r = createEnvReader(env);
  const adminEnabled = r.bool('ADMIN_API_ENABLED');
  const cfg: DevConfig = {
    configDir: r.optional('WEBHOOK_FANOUT_CONFIG_DIR'),
    dataDir: r.optional('WEBHOOK_FANOUT_DATA_DIR'),
    defaultAllowedNamespaces: r.oneOf('TENANCY_DEFAULT_ALLOWED_NAMESPACES'),
    external: {
      databaseUrl: r.optional('DATABASE_URL'),
      temporalAddress: r.optional('TEMPORAL_ADDRESS'),
      awsEndpoint: r.optional('AWS_ENDPOINT_URL'),
    },
    devIdentityProvider:
      adminEnabled && r.optional('AUTH_URL') === undefined
        ? {
            port: r.optional('DEV_AUTH_PORT') === undefined ? undefined : r.int('DEV_AUTH_PORT', 0),
            audience: r.optional('AUTH_AUDIENCE'),
            user: devUser(r),
          }
        : null,
  };
  r.done();
  return cfg;
}
