import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRepositories, type Repositories } from '../../src/db/repositories.js';
import type { DeliveryStatus } from '../../src/domain/statuses.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { addEndpoint, addEvent, uniqueSource } from './support/harness.js';

// The event's final status, the rule finishEvent applies to all its deliveries: it lives in the
// statement that writes it (events.finish), so it is tested there.
describe('events.finish', () => {
  let database: TestDatabase;
  let repos: Repositories;
  beforeAll(async () => {
    database = await createTestDatabase();
    repos = createRepositories(database.db);
  });
  afterAll(async () => {
    await database?.destroy();
  });

  /** An event with one delivery per given status. */
  async function eventWith(statuses: readonly DeliveryStatus[]): Promise<string> {
    const source = uniqueSource();
    for (const _ of statuses) await addEndpoint(repos, { source, url: 'http://127.0.0.1:9/' });
    const eventId = await addEvent(repos, { source });
    const rows = (await repos.deliveries.prepareRun(eventId, eventId)) ?? [];
    await Promise.all(rows.map((r, i) => database.db('webhook_delivery').where({ id: r.delivery.id }).update({ status: statuses[i] })));
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
    expect(await repos.events.finish(eventId)).toMatchObject({ status: expected, previous: 'RECEIVED', receivedAt: expect.any(Date) });
    const event = await repos.events.get(eventId);
    expect(event).toMatchObject({ status: expected, completedAt: expect.any(Date) });
  });

  it('returns the status it replaced (a replay recomputes a settled event), and undefined without the event', async () => {
    const eventId = await eventWith(['FAILED']);
    expect(await repos.events.finish(eventId)).toMatchObject({ status: 'FAILED', previous: 'RECEIVED' });
    await database.db('webhook_delivery').where({ event_id: eventId }).update({ status: 'SUCCESS' });
    expect(await repos.events.finish(eventId)).toMatchObject({ status: 'COMPLETED', previous: 'FAILED' });
    expect(await repos.events.finish('00000000-0000-4000-8000-000000000000')).toBeUndefined();
  });
});
