import type { Destination, Destinations, EventBridgeTarget, HttpTarget, SnsTarget, SqsTarget } from '../delivery/destination.js';
import type { AddressPolicy } from '../delivery/address-policy.js';
import type { AwsSqsSend, KafkaProduceMode } from '../config/settings.js';
import type { AwsClientsDeps } from './aws/aws-clients.js';
import { createHttpDestination } from './http/http-destination.js';
import type { ForwardProxy } from './http/forward-proxy.js';
import { createOAuth2Destination } from './http/oauth2-destination.js';
import { createOAuth2Tokens } from './http/oauth2-tokens.js';
import { createKafkaDestination } from './kafka/kafka-destination.js';
import { createNatsDestination } from './nats/nats-destination.js';
import { createRabbitMqDestination } from './rabbitmq/rabbitmq-destination.js';

export interface DestinationsDeps {
  /** where HTTP and the brokers may connect (the worker's OUTBOUND_* ranges; cloud-metadata addresses denied) */
  addressPolicy: AddressPolicy;
  /** DELIVERY_PROXY_URL: the forward proxy of HTTP deliveries (never of the brokers' or AWS's connections); absent: none */
  proxy?: ForwardProxy;
  /** the AWS destinations' base credentials; absent: the SDK's default chain (the pod's identity), as the transport */
  awsCredentials?: AwsClientsDeps['credentials'];
  /** AWS_SQS_SEND: SQS's SendMessage as one POST signed by us (`direct`, the default) or by the SDK's signer (`direct-sdk-signer`), or through the SDK's send() (`sdk`) */
  awsSqsSend?: AwsSqsSend;
  /** AWS_SQS_BATCH: the direct sends of a busy queue share SendMessageBatch requests (destinations/aws/sqs-direct.ts); on by default */
  awsSqsBatch?: boolean;
  /** KAFKA_PRODUCE: Kafka records of concurrent attempts in one request (the default), or one request each */
  kafkaProduce?: KafkaProduceMode;
}

/**
 * Every destination of one worker process, built once (processes/worker-process.ts) and closed in
 * its drain: the target's type picks the destination. A new type is one more entry here, with its
 * target in delivery/destination.ts (docs/destinations.md, "Writing a destination").
 */
export function createDestinations(deps: DestinationsDeps): Destinations {
  // OAuth2 endpoints get their Bearer token on the way (oauth2-destination.ts); the others pass through
  const http: Destination<HttpTarget> = createOAuth2Destination(
    createHttpDestination({ addressPolicy: deps.addressPolicy, ...(deps.proxy ? { proxy: deps.proxy } : {}) }),
    // token requests take the same way out as deliveries (DELIVERY_PROXY_URL, DELIVERY_NO_PROXY)
    createOAuth2Tokens({ addressPolicy: deps.addressPolicy, ...(deps.proxy ? { proxy: deps.proxy } : {}) }),
  );
  // the brokers' destinations make their clients on first use: an unused type costs nothing
  const kafka = createKafkaDestination({ addressPolicy: deps.addressPolicy, ...(deps.kafkaProduce ? { produce: deps.kafkaProduce } : {}) });
  const rabbitmq = createRabbitMqDestination({ addressPolicy: deps.addressPolicy });
  const nats = createNatsDestination({ addressPolicy: deps.addressPolicy });
  // SQS, SNS and EventBridge share their clients, one set per region, endpoint and role, and are
  // imported on the first send to one of them: a worker that sends to none never loads the SNS and
  // EventBridge SDKs (the worker's footprint: test/cmd/footprint.test.ts)
  const aws = lazyAws(deps);
  const all: Destination<never>[] = [http, kafka, rabbitmq, nats];
  return {
    send(message, target, options) {
      switch (target.type) {
        case 'HTTP':
          return http.send(message, target, options);
        case 'SQS':
          return aws.load().then((d) => d.sqs.send(message, target, options));
        case 'SNS':
          return aws.load().then((d) => d.sns.send(message, target, options));
        case 'EventBridge':
          return aws.load().then((d) => d.eventBridge.send(message, target, options));
        case 'Kafka':
          return kafka.send(message, target, options);
        case 'RabbitMQ':
          return rabbitmq.send(message, target, options);
        case 'NATS':
          return nats.send(message, target, options);
      }
    },
    async close() {
      // each closes its own; one that fails to close does not keep the others open
      const closed = await Promise.allSettled([...all.map((d) => d.close()), aws.close()]);
      const failed = closed.find((c): c is PromiseRejectedResult => c.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}

interface AwsDestinations {
  sqs: Destination<SqsTarget>;
  sns: Destination<SnsTarget>;
  eventBridge: Destination<EventBridgeTarget>;
  close(): Promise<void>;
}

/** The AWS destinations, their modules imported on first use; a failed import is tried again on the next send. */
function lazyAws(deps: DestinationsDeps): { load(): Promise<AwsDestinations>; close(): Promise<void> } {
  let loading: Promise<AwsDestinations> | undefined;
  const load = async (): Promise<AwsDestinations> => {
    const [{ createAwsClients }, { createSqsDestination, createSnsDestination, createEventBridgeDestination }, { createSqsDirect }] =
      await Promise.all([import('./aws/aws-clients.js'), import('./aws/aws-destinations.js'), import('./aws/sqs-direct.js')]);
    const clients = createAwsClients({
      addressPolicy: deps.addressPolicy,
      ...(deps.awsCredentials ? { credentials: deps.awsCredentials } : {}),
    });
    const sqsSend = deps.awsSqsSend ?? 'direct';
    const sqs = createSqsDestination(clients, {
      addressPolicy: deps.addressPolicy,
      ...(sqsSend === 'sdk'
        ? {}
        : {
            direct: createSqsDirect({
              addressPolicy: deps.addressPolicy,
              signer: sqsSend === 'direct' ? 'own' : 'sdk',
              batch: deps.awsSqsBatch ?? true,
            }),
          }),
    });
    return {
      sqs,
      sns: createSnsDestination(clients, { addressPolicy: deps.addressPolicy }),
      eventBridge: createEventBridgeDestination(clients, { addressPolicy: deps.addressPolicy }),
      close: async () => {
        await sqs.close();
        clients.close();
      },
    };
  };
  return {
    load() {
      loading ??= load().catch((err: unknown) => {
        loading = undefined;
        throw err;
      });
      return loading;
    },
    async close() {
      if (loading) await (await loading).close();
    },
  };
}
