import { describe, expect, it } from 'vitest';
import { destinationShown } from '../../../../src/console/ui/destination.js';

type Shown = Parameters<typeof destinationShown>[0];

describe('destinationShown: how and where an endpoint sends, as the console shows it', () => {
  const cases: { name: string; e: Shown; via: string; target: string }[] = [
    {
      name: 'HTTP: the method and the URL',
      e: { method: 'PUT', url: 'https://hooks.example/in', destination: { type: 'HTTP', target: 'https://hooks.example/in' } },
      via: 'PUT',
      target: 'https://hooks.example/in',
    },
    {
      name: 'HTTP with credentials in its URL: the URL as the API masks it',
      e: { method: 'POST', url: 'https://***@hooks.example/in', destination: { type: 'HTTP', target: 'https://***@hooks.example/in' } },
      via: 'POST',
      target: 'https://***@hooks.example/in',
    },
    {
      name: 'Kafka: its type and target, no HTTP method',
      e: { method: 'POST', url: 'kafka://kafka-0:9092/orders', destination: { type: 'Kafka', target: 'kafka://kafka-0:9092/orders' } },
      via: 'Kafka',
      target: 'kafka://kafka-0:9092/orders',
    },
    {
      name: 'SQS: the queue URL',
      e: {
        method: 'POST',
        url: 'https://sqs.eu-west-1.amazonaws.com/1/payments',
        destination: { type: 'SQS', target: 'https://sqs.eu-west-1.amazonaws.com/1/payments' },
      },
      via: 'SQS',
      target: 'https://sqs.eu-west-1.amazonaws.com/1/payments',
    },
    {
      name: 'EventBridge: the bus',
      e: {
        method: 'POST',
        url: 'eventbridge://eu-west-1/orders',
        destination: { type: 'EventBridge', target: 'eventbridge://eu-west-1/orders' },
      },
      via: 'EventBridge',
      target: 'eventbridge://eu-west-1/orders',
    },
  ];
  it.each(cases)('$name', ({ e, via, target }) => {
    expect(destinationShown(e)).toEqual({ via, target });
  });
});
