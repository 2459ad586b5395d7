import { describe, expect, it } from 'vitest';
import type { DeliveryStatus } from '../../src/domain/statuses.js';
import { fileDatabase } from '../support/db.js';
import { addEndpoint, addEvent, uniqueSource } from './support/harness.js';

// The event's final status, the rule finishEvent applies to all its deliveries: it lives in the
// statement that writes it (events.finish), so it is tested there.
describe('events.finish', () => {
  const t = fileDatabase();

  /** An event with one delivery per given status. */
  async function eventWith(statuses: readonly DeliveryStatus[]): Promise<string> {
    const source = uniqueSource();
    for (const _ of statuses) await addEndpoint(t.repos, { source, url: 'http://127.0.0.1:9/' });
    const eventId = await addEvent(t.repos, { source });
    const rows = (await t.repos.deliveries.prepareRun(eventId, eventId)) ?? [];
    await Promise.all(rows.map((r, i) => t.database.db('webhook_delivery').where({ id: r.delivery.id }).update({ status: statuses[i] })));
    return eventId;
  }

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
  ])('%j -> %s', async (statuses, expected) => {
    const eventId = await eventWith(statuses);
    expect(await t.repos.events.finish(eventId)).toMatchObject({ status: expected, previous: 'RECEIVED', receivedAt: expect.any(Date) });
    const event = await t.repos.events.get(eventId);
    expect(event).toMatchObject({ status: expected, completedAt: expect.any(Date) });
  });

  it('returns the status it replaced (a replay recomputes a settled event), and undefined without the event', async () => {
    const eventId = await eventWith(['FAILED']);
    expect(await t.repos.events.finish(eventId)).toMatchObject({ status: 'FAILED', previous: 'RECEIVED' });
    await t.database.db('webhook_delivery').where({ event_id: eventId }).update({ status: 'SUCCESS' });
    expect(await t.repos.events.finish(eventId)).toMatchObject({ status: 'COMPLETED', previous: 'FAILED' });
    expect(await t.repos.events.finish('00000000-0000-4000-8000-000000000000')).toBeUndefined();
  });

  it.each<[DeliveryStatus[], string]>([
    [['PENDING'], 'pending'],
    [['SUCCESS', 'PENDING'], 'pending'],
    [['FAILED', 'PENDING'], 'pending'],
    [['SUCCESS'], 'COMPLETED'],
    [['SUCCESS', 'FAILED'], 'PARTIAL'],
    [[], 'COMPLETED'],
  ])("finishIfSettled %j -> %s: nothing written while a delivery is PENDING (one left to its key's chain)", async (statuses, expected) => {
    const eventId = await eventWith(statuses);
    const finished = await t.repos.events.finishIfSettled(eventId);
    if (expected === 'pending') {
      expect(finished).toBe('pending');
      expect(await t.repos.events.get(eventId)).toMatchObject({ status: 'RECEIVED', completedAt: null });
      return;
    }
    expect(finished).toMatchObject({ status: expected, previous: 'RECEIVED', receivedAt: expect.any(Date) });
    expect(await t.repos.events.get(eventId)).toMatchObject({ status: expected, completedAt: expect.any(Date) });
  });

  it('finishIfSettled: two ends at once finish the event once (the second reads the first status it wrote)', async () => {
    const eventId = await eventWith(['SUCCESS', 'SUCCESS']);
    const both = await Promise.all([t.repos.events.finishIfSettled(eventId), t.repos.events.finishIfSettled(eventId)]);
    const previous = both.map((f) => (typeof f === 'object' ? f.previous : f)).sort();
    expect(previous).toEqual(['COMPLETED', 'RECEIVED']);
    expect(await t.repos.events.finishIfSettled('00000000-0000-4000-8000-000000000000')).toBeUndefined();
  });
});
