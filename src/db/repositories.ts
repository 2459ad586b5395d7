import { createCredentialRepository } from './credentials.js';
import { createDeliveryRepository } from './deliveries.js';
import { createEndpointLimitRepository } from './endpoint-limits.js';
import { createEndpointRepository } from './endpoints.js';
import { createEventRepository } from './events.js';
import { createOrderingRepository } from './ordering.js';
import type { Db } from './knex.js';

export function createRepositories(db: Db) {
  return {
    credentials: createCredentialRepository(db),
    endpoints: createEndpointRepository(db),
    events: createEventRepository(db),
    deliveries: createDeliveryRepository(db),
    endpointLimits: createEndpointLimitRepository(db),
    ordering: createOrderingRepository(db),
  };
}

export type Repositories = ReturnType<typeof createRepositories>;
