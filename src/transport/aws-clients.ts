import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';

export interface AwsClients {
  sns: SNSClient;
  sqs: SQSClient;
}

export interface AwsClientsOptions {
  region: string;
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

/**
 * SNS and SQS clients with timeouts short enough that a dead endpoint fails in seconds: the SDK
 * default has no connect or request timeout, which would hang an inbound request indefinitely.
 */
export function createAwsClients(opts: AwsClientsOptions): AwsClients {
  const env = opts.env ?? process.env;
  const maxAttempts = opts.maxAttempts ?? 2;
  const connectionTimeout = opts.connectionTimeoutMs ?? 2_000;
  // an emulator without credentials in the environment: the default chain would probe IMDS and fail slowly
  const credentials = opts.endpoint !== undefined && !hasEnvCredentials(env) ? EMULATOR_CREDENTIALS : undefined;
  const common = {
    region: opts.region,
    maxAttempts,
    ...(opts.endpoint !== undefined ? { endpoint: opts.endpoint } : {}),
    ...(credentials !== undefined ? { credentials } : {}),
  };
  const sns = new SNSClient({
    ...common,
    requestHandler: {
      connectionTimeout,
      requestTimeout: opts.snsRequestTimeoutMs ?? 5_000,
      throwOnRequestTimeout: true,
    },
  });
  const sqs = new SQSClient({
    ...common,
    requestHandler: {
      connectionTimeout,
      requestTimeout: opts.sqsRequestTimeoutMs ?? 30_000,
      throwOnRequestTimeout: true,
    },
  });
  return { sns, sqs };
}
