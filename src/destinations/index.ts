import type { Destination, Destinations, HttpTarget } from '../delivery/destination.js';
import type { AddressPolicy } from '../delivery/address-policy.js';
import { createAwsClients, type AwsClientsDeps } from './aws/aws-clients.js';
import { createEventBridgeDestination, createSnsDestination, createSqsDestination } from './aws/aws-destinations.js';
import { createHttpDestination } from './http/http-destination.js';
import { createKafkaDestination } from './kafka/kafka-destination.js';
import { createNatsDestination } from './nats/nats-destination.js';
import { createRabbitMqDestination } from './rabbitmq/rabbitmq-destination.js';

export interface DestinationsDeps {
  /** where HTTP and the brokers may connect (the worker's OUTBOUND_* ranges; cloud-metadata addresses denied) */
  addressPolicy: AddressPolicy;
  /** the AWS destinations' base credentials; absent: the SDK's default chain (the pod's identity), as the transport */
  awsCredentials?: AwsClientsDeps['credentials'];
}

/**
 * Every destination of one worker process, built once (processes/worker-process.ts) and closed in
 * its drain: the target's type picks the destination. A new type is one more entry here, with its
 * target in delivery/destination.ts (docs/destinations.md, "Writing a destination").
 */
export function createDestinations(deps: DestinationsDeps): Destinations {
  const http: Destination<HttpTarget> = createHttpDestination({ addressPolicy: deps.addressPolicy });
  // the brokers' destinations make their clients on first use: an unused type costs nothing
  const kafka = createKafkaDestination({ addressPolicy: deps.addressPolicy });
  const rabbitmq = createRabbitMqDestination({ addressPolicy: deps.addressPolicy });
  const nats = createNatsDestination({ addressPolicy: deps.addressPolicy });
  // SQS, SNS and EventBridge share their clients, one set per region, endpoint and role
  const aws = createAwsClients({ addressPolicy: deps.addressPolicy, ...(deps.awsCredentials ? { credentials: deps.awsCredentials } : {}) });
  const sqs = createSqsDestination(aws);
  const sns = createSnsDestination(aws);
  const eventBridge = createEventBridgeDestination(aws);
  const all: Destination<never>[] = [http, kafka, rabbitmq, nats, sqs, sns, eventBridge];
  return {
    send(message, target, options) {
      switch (target.type) {
        case 'HTTP':
          return http.send(message, target, options);
        case 'SQS':
          return sqs.send(message, target, options);
        case 'SNS':
          return sns.send(message, target, options);
        case 'EventBridge':
          return eventBridge.send(message, target, options);
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
      const closed = await Promise.allSettled([...all.map((d) => d.close()), (async () => aws.close())()]);
      const failed = closed.find((c): c is PromiseRejectedResult => c.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}
