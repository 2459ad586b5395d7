import { describe, expect, it } from 'vitest';
import { createRedriveQueries } from '../../src/db/redrive-queries.js';
import { fileDatabase } from '../support/db.js';
import { seedEndpoint, seedEvent } from '../retention/support.js';

// What the redriver reports each pass for the endpoint-health panels and alerts: endpoints
// disabled, endpoints paused now by a Retry-After, deliveries held for disabled endpoints.

describe('redrive health: disabled, paused, held', () => {
  const t = fileDatabase();

  it('counts what is disabled, paused now (not a pause that ended) and held', async () => {
    const q = createRedriveQueries(t.database.db);
    expect(await q.health()).toEqual({ disabled: 0, paused: 0, held: 0 });
    const [disabled, paused, pauseOver, inactive] = [
      await seedEndpoint(t.database.db),
      await seedEndpoint(t.database.db),
      await seedEndpoint(t.database.db),
      await seedEndpoint(t.database.db),
    ];
    await t.database.db('webhook_endpoint').where({ id: disabled }).update({ disabled_at: t.database.db.fn.now() });
    await t.database
      .db('webhook_endpoint')
      .where({ id: paused })
      .update({ paused_until: t.database.db.raw(`now() + interval '5 minutes'`) });
    await t.database
      .db('webhook_endpoint')
      .where({ id: pauseOver })
      .update({ paused_until: t.database.db.raw(`now() - interval '1 minute'`) });
    // a deactivated endpoint's state is not health: it is configuration
    await t.database.db('webhook_endpoint').where({ id: inactive }).update({ active: false, disabled_at: t.database.db.fn.now() });
    for (let i = 0; i < 3; i++)
      await seedEvent(t.database.db, [disabled], {
        source: 'h',
        age: 60,
        status: 'FAILED',
        deliveries: [{ status: 'FAILED', held: true }],
      });
    await seedEvent(t.database.db, [paused], { source: 'h', age: 60, status: 'FAILED', deliveries: [{ status: 'FAILED' }] });
    expect(await q.health()).toEqual({ disabled: 1, paused: 1, held: 3 });
  });
});
