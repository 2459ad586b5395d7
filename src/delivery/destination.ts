import type { Endpoint, EndpointDestination, OAuth2Client } from '../domain/records.js';
import type { AuthType, HttpMethod } from '../domain/statuses.js';
import type { KafkaTarget, NatsTarget, RabbitMqTarget } from './broker-targets.js';
import type { Message } from './message.js';
import type { DeliveryOutcome } from './types.js';

/**
 * The contract between a delivery and where it goes (docs/destinations.md, "Writing a
 * destination"). The delivery decides everything that is not sending: limits, attempts, backoff,
 * revocation, the body and its format, the signature, what is recorded. A destination sends one
 * message to one target and classifies the answer: it resolves to an outcome for every answer and
 * every failure of the broker or the network (outcomes are values), and throws only for a bug (the
 * deliver activity then spends an attempt on it as an internal error).
 */
export interface Destination<T extends DestinationTarget = DestinationTarget> {
  send(message: Message, target: T, options: SendOptions): Promise<DeliveryOutcome>;
  /** releases connections and clients; attempts in flight finish first */
  close(): Promise<void>;
}

export interface SendOptions {
  /** the endpoint's timeout for this attempt (spec.timeoutSeconds): past it, the outcome is a retryable timeout */
  timeoutMs: number;
}

/** Every destination of a worker process by type, one entry point: the target's type picks the destination. */
export type Destinations = Destination<DestinationTarget>;

/** Where an HTTP endpoint's messages go, and what HTTP alone adds to them. */
export interface HttpTarget {
  type: 'HTTP';
  url: string;
  method: HttpMethod;
  /**
   * BASIC and BEARER make an Authorization header (spec.auth), OAUTH2_CLIENT_CREDENTIALS a Bearer
   * token from `oauth2`'s token endpoint (destinations/http/oauth2-destination.ts); spec.signing
   * signs the message itself (message.ts)
   */
  auth: {
    type: AuthType;
    username: string | null;
    /** BASIC password, BEARER token, OAUTH2_CLIENT_CREDENTIALS client secret or PrivateKeyJwt private key (PEM) */
    secret: string | null;
    /** OAUTH2_CLIENT_CREDENTIALS: the token endpoint and the client */
    oauth2?: OAuth2Client;
  };
  customHeaders: Record<string, string>;
  /** 4xx codes the endpoint opted in to retrying */
  retryOnStatus: readonly number[];
  /** spec.tls: a client certificate and key (PEM) for mTLS, CA certificates replacing the system roots; absent: neither */
  tls?: { certificate: string | null; key: string | null; caBundle: string | null };
  /** spec.proxy Direct: never through the installation's forward proxy (DELIVERY_PROXY_URL); absent: through it when one is set */
  proxy?: 'Direct';
}

type DestinationOf<T extends EndpointDestination['type']> = Extract<EndpointDestination, { type: T }>;

/** AWS destinations: the pod's identity (or the role it assumes); no secret of the endpoint's. */
export type SqsTarget = DestinationOf<'SQS'>;
export type SnsTarget = DestinationOf<'SNS'>;
export type EventBridgeTarget = DestinationOf<'EventBridge'>;

/** Where one endpoint's messages go: one shape per destination type. */
export type DestinationTarget = HttpTarget | SqsTarget | SnsTarget | EventBridgeTarget | KafkaTarget | RabbitMqTarget | NatsTarget;

/** The endpoint's destination, as its row says it now (a changed URL or queue applies to the next attempt). */
export function targetOf(e: Endpoint): DestinationTarget {
  const d = e.destination;
  switch (d.type) {
    case 'HTTP':
      return {
        type: 'HTTP',
        url: e.url,
        method: e.method,
        auth: { type: e.authType, username: e.authUsername, secret: e.authSecret, ...(e.authOAuth2 ? { oauth2: e.authOAuth2 } : {}) },
        customHeaders: e.customHeaders,
        retryOnStatus: e.retryOnStatus,
        ...(e.tlsClientCertificate !== null || e.tlsCaBundle !== null
          ? { tls: { certificate: e.tlsClientCertificate, key: e.tlsClientKey, caBundle: e.tlsCaBundle } }
          : {}),
        ...(e.proxyDirect ? { proxy: 'Direct' as const } : {}),
      };
    case 'SQS':
    case 'SNS':
    case 'EventBridge':
      return d;
    // the brokers: the row's destination with its credentials, read from Secrets of the endpoint's namespace
    case 'Kafka':
    case 'RabbitMQ':
    case 'NATS':
      return { ...d, secrets: e.destinationSecrets };
  }
}

/** What names an attempt on its span (observability/attempt-span.ts): the operation and the address, never a secret. */
export function spanTargetOf(t: DestinationTarget): { operation: string; address: string } {
  switch (t.type) {
    case 'HTTP':
      return { operation: t.method, address: t.url };
    case 'SQS':
      return { operation: 'SQS SendMessage', address: t.queueUrl };
    case 'SNS':
      return { operation: 'SNS Publish', address: t.topicArn };
    case 'EventBridge':
      return { operation: 'EventBridge PutEvents', address: `eventbridge://${t.region}/${t.eventBusName}` };
    // the broker and where on it: never the credentials, which the targets keep apart
    case 'Kafka':
      return { operation: 'produce', address: `kafka://${t.bootstrapServers.join(',')}/${t.topic}` };
    case 'RabbitMQ':
      return { operation: 'publish', address: `${t.url.replace(/\/$/, '')}/${t.exchange}` };
    case 'NATS':
      return { operation: 'publish', address: `${t.servers.join(',')}/${t.subject}` };
  }
}
