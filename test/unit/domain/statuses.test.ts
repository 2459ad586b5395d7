import { describe, expect, it } from 'vitest';
import { eventOutcome, type DeliveryStatus } from '../../../src/domain/statuses.js';

// The event's final status, the rule finishEvent applies to all its deliveries.
describe('eventOutcome', () => {
  it.each<[DeliveryStatus[], string]>([
    [[], 'COMPLETED'],
    [['SUCCESS'], 'COMPLETED'],
    [['SUCCESS', 'SUCCESS', 'SUCCESS'], 'COMPLETED'],
    [['FAILED'], 'FAILED'],
    [['FAILED', 'FAILED'], 'FAILED'],
    [['SUCCESS', 'FAILED'], 'PARTIAL'],
    [['FAILED', 'SUCCESS', 'SUCCESS'], 'PARTIAL'],
    // a delivery still PENDING (its run ended without settling it) keeps the event from COMPLETED or FAILED
    [['PENDING'], 'PARTIAL'],
    [['SUCCESS', 'PENDING'], 'PARTIAL'],
    [['FAILED', 'PENDING'], 'PARTIAL'],
  ])('%j -> %s', (deliveries, expected) => {
    expect(eventOutcome(deliveries)).toBe(expected);
  });
});
