import type { Endpoint } from '../api/types.js';

/** Where an endpoint's deliveries go, in two parts: how (the HTTP method, or the destination's type) and where. */
export interface DestinationShown {
  via: string;
  target: string;
}

/**
 * An HTTP endpoint is its method and URL; any other destination (docs/destinations.md) is its type
 * and target (queue URL, topic ARN, kafka://brokers/topic...): a Kafka endpoint shown as
 * "POST kafka://..." read as an HTTP call that never happens. Pure.
 */
export function destinationShown(e: Pick<Endpoint, 'destination' | 'method' | 'url'>): DestinationShown {
  return e.destination.type === 'HTTP' ? { via: e.method, target: e.url } : { via: e.destination.type, target: e.destination.target };
}
