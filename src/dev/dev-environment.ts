import {
  loadConsumerConfig,
  loadIngestConfig,
  loadTransportSetupConfig,
  loadWorkerConfig,
  type AdminApiConfig,
  type ConsumerConfig,
  type IngestConfig,
  type TransportSetupConfig,
  type WorkerConfig,
} from '../config/config.js';
import { ConfigError, type Env } from '../config/env-reader.js';
import { DEFAULT_NAMESPACES_CLAIM } from '../config/settings.js';
import type { DevConfig } from './dev-config.js';
import { DEV_AUDIENCE, DEV_CONSOLE_CLIENT_ID } from './dev-idp.js';

/**
 * Dev mode runs the production processes with the production config loaders, on an overlay of
 * the environment: its own defaults under the user's variables, and over them the addresses of
 * what it started (or was pointed at), so that every process reads the same values.
 */

/** Where dev mode's defaults differ from production's; the user's environment still wins. */
const DEV_DEFAULTS: Env = {
  // one pool for ingest, consumer and worker together
  DB_POOL_MAX: '20',
  // a stuck event shows up again within seconds while one tries things out
  SWEEP_INTERVAL_SECONDS: '10',
  SWEEP_MIN_AGE_SECONDS: '10',
};

/** What dev mode started, or the external dependency the environment names instead. */
export interface DevWiring {
  databaseUrl: string;
  temporalAddress: string;
  awsEndpoint: string;
  topicArn: string;
  queueUrl: string;
  /** the local identity provider, when dev mode runs one */
  devIdentityProvider: AdminApiConfig | null;
}

/** The values the configuration is checked with before anything is started (see preflight). */
const NOT_STARTED_YET: Omit<DevWiring, 'devIdentityProvider'> = {
  databaseUrl: 'postgres://embedded/dev',
  temporalAddress: '127.0.0.1:7233',
  awsEndpoint: 'http://127.0.0.1',
  topicArn: 'arn:aws:sns:us-east-1:000000000000:dev',
  queueUrl: 'http://127.0.0.1/dev',
};

export function devEnvironment(env: Env, wiring: DevWiring): Env {
  const idp = wiring.devIdentityProvider;
  return {
    ...DEV_DEFAULTS,
    ...env,
    DATABASE_URL: wiring.databaseUrl,
    TEMPORAL_ADDRESS: wiring.temporalAddress,
    AWS_ENDPOINT_URL: wiring.awsEndpoint,
    TOPIC_ARN: wiring.topicArn,
    QUEUE_URL: wiring.queueUrl,
    // dev mode serves this machine only
    HOST: '127.0.0.1',
    // the local identity provider knows one console client, its own
    ...(idp
      ? { AUTH_URL: idp.authUrl, AUTH_AUDIENCE: idp.audience, AUTH_ISSUER: idp.issuer, CONSOLE_CLIENT_ID: DEV_CONSOLE_CLIENT_ID }
      : {}),
  };
}

export interface DevProcessConfigs {
  ingest: IngestConfig;
  consumer: ConsumerConfig;
  worker: WorkerConfig;
  transport: TransportSetupConfig;
}

/** The configuration of every process dev mode runs, every problem of all of them named at once. */
export function loadDevProcessConfigs(env: Env): DevProcessConfigs {
  const problems = new Set<string>();
  const load = <T>(loader: (env: Env) => T): T | undefined => {
    try {
      return loader(env);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      for (const p of err.problems) problems.add(p);
      return undefined;
    }
  };
  const ingest = load(loadIngestConfig);
  const consumer = load(loadConsumerConfig);
  const worker = load(loadWorkerConfig);
  const transport = load(loadTransportSetupConfig);
  if (!ingest || !consumer || !worker || !transport) throw new ConfigError([...problems]);
  return { ingest, consumer, worker, transport };
}

/**
 * The configuration checked before dev mode starts anything, with stand-ins for the addresses it
 * does not know yet: a mistake is named at once, not after embedded Postgres came up.
 */
export function preflight(env: Env, dev: DevConfig): DevProcessConfigs {
  const idp = dev.devIdentityProvider;
  return loadDevProcessConfigs(
    devEnvironment(env, {
      ...NOT_STARTED_YET,
      databaseUrl: dev.external.databaseUrl ?? NOT_STARTED_YET.databaseUrl,
      temporalAddress: dev.external.temporalAddress ?? NOT_STARTED_YET.temporalAddress,
      awsEndpoint: dev.external.awsEndpoint ?? NOT_STARTED_YET.awsEndpoint,
      devIdentityProvider: idp && {
        authUrl: 'http://127.0.0.1',
        audience: idp.audience ?? DEV_AUDIENCE,
        issuer: 'http://127.0.0.1/',
        clockToleranceSeconds: 0,
        jwksCacheTtlSeconds: 0,
        // not passed on: the processes read AUTH_NAMESPACES_CLAIM from the environment themselves
        namespacesClaim: DEFAULT_NAMESPACES_CLAIM,
      },
    }),
  );
}
