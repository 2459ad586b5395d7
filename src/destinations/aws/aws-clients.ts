import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { Readable } from 'node:stream';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import type { AddressPolicy } from '../../delivery/address-policy.js';
import { createGuardedLookup } from '../../delivery/guarded-lookup.js';
import type { AwsAccess } from '../../domain/records.js';

/** Credentials as the SDK clients take them: an identity, or a provider of one. */
type Credentials = NonNullable<SQSClientConfig['credentials']>;
type Identity = Exclude<Credentials, (...args: never[]) => unknown>;

export interface AwsClientsDeps {
  /** every connection resolves through it: an endpointUrl never reaches a cloud-metadata address */
  addressPolicy: AddressPolicy;
  /** the base credentials; absent: the SDK's default chain (the pod's identity: IRSA, EKS Pod Identity), as the transport does */
  credentials?: Credentials;
  /** TCP connect timeout of every call, ms */
  connectionTimeoutMs?: number;
}

interface Clients {
  sqs: SQSClient;
  sns: SNSClient;
  eventBridge: EventBridgeClient;
}

/** Assumed roles' credentials are renewed this long before they expire. */
const RENEW_BEFORE_MS = 5 * 60_000;

/**
 * The SDK clients of the AWS destinations, one set per distinct (region, endpoint, role), made on
 * first use and kept for the worker's life (a client per attempt would open a connection and
 * resolve credentials each time). Every call is one attempt (maxAttempts 1): the delivery's retry
 * policy decides the next one, so an endpoint's attempts count what was published.
 */
export function createAwsClients(deps: AwsClientsDeps) {
  const sets = new Map<string, Clients>();
  // one pair of agents for every client: keep-alive connections, each new one resolved through the policy
  const lookup = createGuardedLookup(deps.addressPolicy);
  const httpAgent = new HttpAgent({ keepAlive: true, lookup });
  const httpsAgent = new HttpsAgent({ keepAlive: true, lookup });

  function credentialsOf(access: AwsAccess): Credentials | undefined {
    if (access.roleArn === null) return deps.credentials;
    const sts = new STSClient({ ...common(access), ...(deps.credentials ? { credentials: deps.credentials } : {}) });
    const roleArn = access.roleArn;
    let cached: Identity | undefined;
    return async (): Promise<Identity> => {
      if (cached?.expiration && cached.expiration.getTime() - RENEW_BEFORE_MS > Date.now()) return cached;
      const r = await sts.send(new AssumeRoleCommand({ RoleArn: roleArn, RoleSessionName: 'webhook-fanout' }));
      const c = r.Credentials;
      if (!c?.AccessKeyId || !c.SecretAccessKey) throw new Error(`STS AssumeRole of ${roleArn} returned no credentials`);
      cached = {
        accessKeyId: c.AccessKeyId,
        secretAccessKey: c.SecretAccessKey,
        ...(c.SessionToken ? { sessionToken: c.SessionToken } : {}),
        ...(c.Expiration ? { expiration: c.Expiration } : {}),
      };
      return cached;
    };
  }

  function common(access: AwsAccess) {
    return {
      region: access.region,
      maxAttempts: 1,
      ...(access.endpointUrl !== null ? { endpoint: access.endpointUrl } : {}),
      requestHandler: { connectionTimeout: deps.connectionTimeoutMs ?? 3_000, httpAgent, httpsAgent },
    };
  }

  return {
    of(access: AwsAccess): Clients {
      const key = JSON.stringify([access.region, access.endpointUrl, access.roleArn]);
      let set = sets.get(key);
      if (!set) {
        const credentials = credentialsOf(access);
        const config = { ...common(access), ...(credentials ? { credentials } : {}) };
        set = { sqs: new SQSClient(config), sns: new SNSClient(config), eventBridge: new EventBridgeClient(config) };
        const keep = { step: 'deserialize', priority: 'low', name: 'keepXmlErrorBody' } as const;
        set.sqs.middlewareStack.add(keepXmlErrorBody, keep);
        set.sns.middlewareStack.add(keepXmlErrorBody, keep);
        set.eventBridge.middlewareStack.add(keepXmlErrorBody, keep);
        sets.set(key, set);
      }
      return set;
    },
    close(): void {
      for (const s of sets.values()) {
        s.sqs.destroy();
        s.sns.destroy();
        s.eventBridge.destroy();
      }
      sets.clear();
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}
export type AwsClients = ReturnType<typeof createAwsClients>;

/** The most of an error body kept (an XML error is a few hundred bytes; a proxy's page may be more). */
const KEPT_ERROR_BODY_BYTES = 16 * 1024;

/**
 * Keeps an XML (or HTML) error answer readable: SQS and EventBridge speak JSON, and their clients'
 * error for a body they can not parse says only "Unexpected token '<'". An emulator such as moto
 * refuses a signature or a policy in XML, and a proxy in front of the service may answer so too.
 * Inside the client's deserializer (priority low), the body is read here and left on the response
 * as bytes, which the error keeps ($response) and classifyAwsError reads the code and message from.
 */
function keepXmlErrorBody<A, R extends { response: unknown }>(next: (args: A) => Promise<R>): (args: A) => Promise<R> {
  return async (args) => {
    const out = await next(args);
    const response = out.response as { statusCode?: unknown; headers?: Record<string, string>; body?: unknown };
    const type = response.headers?.['content-type'] ?? '';
    const body = response.body;
    if (typeof response.statusCode === 'number' && response.statusCode >= 400 && /xml|html/i.test(type) && body instanceof Readable) {
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of body as AsyncIterable<Buffer>) {
        if (size < KEPT_ERROR_BODY_BYTES) chunks.push(chunk);
        size += chunk.length;
      }
      response.body = Buffer.concat(chunks).subarray(0, KEPT_ERROR_BODY_BYTES);
    }
    return out;
  };
}
