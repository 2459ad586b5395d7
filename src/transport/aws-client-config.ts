import type { AwsTransport } from '../config/settings.js';

// What the SNS and the SQS clients share (region, endpoint, attempts, credentials, timeouts), in a
// module of its own that loads neither SDK client: a process that needs only one of them (the
// consumer: SQS) does not load the other (its code stays in memory for the process's life).

export interface AwsClientsOptions {
  region: string;
  /** default signed */
  transport?: AwsTransport;
  /** SNS/SQS endpoint override (emulators, AWS_ENDPOINT_URL); absent = real AWS */
  endpoint?: string;
  /** attempts per call, first included; kept low because publishing sits on the inbound request path */
  maxAttempts?: number;
  /** TCP connect timeout, ms */
  connectionTimeoutMs?: number;
  /** whole-request timeout for SNS calls, ms */
  snsRequestTimeoutMs?: number;
  /** whole-request timeout for SQS calls, ms; must exceed the consumer's long poll (20 s) */
  sqsRequestTimeoutMs?: number;
  /** where credentials are looked for; defaults to process.env */
  env?: NodeJS.ProcessEnv;
}

/** Emulators accept any credentials; these only let the SDK sign requests without a real chain. */
const EMULATOR_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' } as const;

function hasEnvCredentials(env: NodeJS.ProcessEnv): boolean {
  return Boolean(
    env.AWS_ACCESS_KEY_ID ||
    env.AWS_PROFILE ||
    env.AWS_WEB_IDENTITY_TOKEN_FILE ||
    env.AWS_CONTAINER_CREDENTIALS_FULL_URI ||
    env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI,
  );
}

/** Whole-request timeouts when the options give none: SNS sits on the inbound path, SQS long-polls 20 s. */
export const DEFAULT_REQUEST_TIMEOUT_MS = { sns: 5_000, sqs: 30_000 } as const;

/** Attempts and timeouts of one service's calls, each default in one place: the SDK client's and the signed calls' (signed-aws-call.ts). */
export function callLimits(
  opts: AwsClientsOptions,
  service: keyof typeof DEFAULT_REQUEST_TIMEOUT_MS,
): { maxAttempts: number; connectionTimeoutMs: number; requestTimeoutMs: number } {
  return {
    maxAttempts: opts.maxAttempts ?? 2,
    connectionTimeoutMs: opts.connectionTimeoutMs ?? 2_000,
    requestTimeoutMs: (service === 'sns' ? opts.snsRequestTimeoutMs : opts.sqsRequestTimeoutMs) ?? DEFAULT_REQUEST_TIMEOUT_MS[service],
  };
}

/**
 * The configuration of one client: region, endpoint, attempts, credentials, and a request handler
 * with a connect and a whole-request timeout, short enough that a dead endpoint fails in seconds
 * (the SDK's default has neither, which would hang an inbound request indefinitely).
 */
export function clientConfig(
  opts: AwsClientsOptions,
  service: keyof typeof DEFAULT_REQUEST_TIMEOUT_MS,
): {
  region: string;
  maxAttempts: number;
  endpoint?: string;
  credentials?: typeof EMULATOR_CREDENTIALS;
  requestHandler: { connectionTimeout: number; requestTimeout: number; throwOnRequestTimeout: true };
} {
  const env = opts.env ?? process.env;
  // an emulator without credentials in the environment: the default chain would probe IMDS and fail slowly
  const credentials = opts.endpoint !== undefined && !hasEnvCredentials(env) ? EMULATOR_CREDENTIALS : undefined;
  const limits = callLimits(opts, service);
  return {
    region: opts.region,
    maxAttempts: limits.maxAttempts,
    ...(opts.endpoint !== undefined ? { endpoint: opts.endpoint } : {}),
    ...(credentials !== undefined ? { credentials } : {}),
    requestHandler: { connectionTimeout: limits.connectionTimeoutMs, requestTimeout: limits.requestTimeoutMs, throwOnRequestTimeout: true },
  };
}
