import { DEFAULT_OPERATIONS_EVENTS, type OperationsEventsSettings } from '../config/settings.js';
import { createBulkReplays } from './bulk-replays.js';
import { createCredentialRepository } from './credentials.js';
import { createDeliveryRepository } from './deliveries.js';
import { createEndpointLimitRepository } from './endpoint-limits.js';
import { createEndpointRepository } from './endpoints.js';
import { createEventRepository } from './events.js';
import { createOrderingRepository } from './ordering.js';
import type { Db } from './knex.js';
import { createOperationalEvents } from './operational-events.js';
import { createProvenAddressRepository } from './proven-addresses.js';

/** `operations`: the reserved source the service records its own events under, and who receives them (docs/operations-events.md). */
export function createRepositories(db: Db, opts: { operations?: OperationsEventsSettings } = {}) {
  const operations = opts.operations ?? DEFAULT_OPERATIONS_EVENTS;
  const operationalEvents = createOperationalEvents(db, operations.source);
  return {
    credentials: createCredentialRepository(db),
    endpoints: createEndpointRepository(db, operations),
    events: createEventRepository(db, operations),
    deliveries: createDeliveryRepository(db, operations),
    endpointLimits: createEndpointLimitRepository(db),
    ordering: createOrderingRepository(db, operations.source),
    operationalEvents,
    bulkReplays: createBulkReplays(db, operationalEvents),
    provenAddresses: createProvenAddressRepository(db),
  };
}

export type Repositories = ReturnType<typeof createRepositories>;
