import type { Destination, Destinations, HttpTarget } from '../delivery/destination.js';
import { invalidRequest } from '../delivery/types.js';
import type { AddressPolicy } from '../delivery/address-policy.js';
import { createHttpDestination } from './http/http-destination.js';

export interface DestinationsDeps {
  /** where HTTP may connect (the worker's OUTBOUND_* ranges; cloud-metadata addresses denied) */
  addressPolicy: AddressPolicy;
}

/**
 * Every destination of one worker process, built once (processes/worker-process.ts) and closed in
 * its drain: the target's type picks the destination. A new type is one more entry here, with its
 * target in delivery/destination.ts (docs/destinations.md, "Writing a destination").
 */
export function createDestinations(deps: DestinationsDeps): Destinations {
  const http: Destination<HttpTarget> = createHttpDestination({ addressPolicy: deps.addressPolicy });
  const all: Destination<never>[] = [http];
  return {
    send(message, target, options) {
      switch (target.type) {
        case 'HTTP':
          return http.send(message, target, options);
        case 'SQS':
        case 'SNS':
        case 'EventBridge':
        case 'Kafka':
        case 'RabbitMQ':
        case 'NATS':
          // the spec and the row know the type before this worker can send to it: final, with the reason
          return Promise.resolve(invalidRequest(`this worker has no ${target.type} destination yet`));
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
