export { createAwsClients, type AwsClients, type AwsClientsOptions } from './aws-clients.js';
export { createSnsClient } from './sns-client.js';
export { createSqsClient } from './sqs-client.js';
export { ensureTopology, topicToQueuePolicy, DEFAULT_TOPOLOGY, type Topology, type TopologyOptions } from './topology.js';
export { createEventPublisher, type EventPublisher } from './publisher.js';
export { createBatchingSnsPublisher } from './batching-publisher.js';
export { createQueueConsumer, type EventHandler, type QueueConsumer, type QueueConsumerOptions } from './queue-consumer.js';
export { decodeEventMessage, encodeEventMessage, isEventId, type EventMessage } from './event-message.js';
