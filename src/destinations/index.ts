import type { Destination, Destinations, HttpTarget } from '../delivery/destination.js';
import { invalidRequest } from '../delivery/types.js';
import type { AddressPolicy } from '../delivery/address-policy.js';
import { createHttpDestination } from './http/http-destination.js';
import { createKafkaDestination } from './kafka/kafka-destination.js';
import { createNatsDestination } from './nats/nats-destination.js';
import { createRabbitMqDestination } from './rabbitmq/rabbitmq-destination.js';

export interface DestinationsDeps {
  /** where HTTP and the brokers may connect (the worker's OUTBOUND_* ranges; cloud-metadata addresses denied) */
  addressPolicy: AddressPolicy;
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
  const all: Destination<never>[] = [http, kafka, rabbitmq, nats];
  return {
    send(message, target, options) {
      switch (target.type) {
        case 'HTTP':
          return http.send(message, target, options);
        case 'SQS':
        case 'SNS':
        case 'EventBridge':
          // the spec and the row know the type before this worker can send to it: final, with the reason
          return Promise.resolve(invalidRequest(`this worker has no ${target.type} destination yet`));
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
      const closed = await Promise.allSettled(all.map((d) => d.close()));
      const failed = closed.find((c): c is PromiseRejectedResult => c.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}
