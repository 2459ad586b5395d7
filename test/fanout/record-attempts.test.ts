import { describe, expect, it } from 'vitest';
import { createAttemptRecorder } from '../../src/activities/attempt-recorder.js';
import type { AttemptResult } from '../../src/db/deliveries.js';
import { fileDatabase } from '../support/db.js';
import { addEndpoint, addEvent, uniqueSource } from './support/harness.js';

// recordAttempts against the real Postgres: several attempts settled by one statement (the
// worker's attempt recorder sends those that end together) must leave the rows, the attempt log
// and the endpoint's health as the same attempts recorded one by one in that order do.
type Outcome = 'SUCCESS' | 'FAILED' | 'RETRYING' | 'SKIPPED';

const result = (o: Outcome): AttemptResult => ({
  status: o === 'RETRYING' ? 'PENDING' : o === 'SKIPPED' ? 'FAILED' : o,
  responseStatus: o === 'SUCCESS' ? 200 : o === 'SKIPPED' ? null : 500,
  responseBody: o === 'SKIPPED' ? null : `body ${o}`,
  error: o === 'SUCCESS' ? null : `error ${o}`,
  startedAt: new Date('2026-11-26T00:00:00.000Z'),
  durationMs: o === 'SKIPPED' ? null : 12.4,
  ...(o === 'SKIPPED' ? { skipped: 'endpoint_disabled' as const } : {}),
});

describe('recordAttempts: several attempts in one statement', () => {
  const t = fileDatabase();

  /** an endpoint with `before` failures in a row (disabled when `disabled`) and one prepared delivery per outcome */
  async function arrange(opts: { outcomes: Outcome[]; threshold: number; before: number; disabled?: boolean }) {
    const source = uniqueSource('batch');
    const endpointId = await addEndpoint(t.repos, { source, url: 'http://192.0.2.1/', autoDisableAfter: opts.threshold });
    await t.database
      .db('webhook_endpoint')
      .where({ id: endpointId })
      .update({ consecutive_failures: opts.before, disabled_at: opts.disabled ? new Date() : null });
    const ids: string[] = [];
    for (const _ of opts.outcomes) {
      const eventId = await addEvent(t.repos, { source });
      const rows = await t.repos.deliveries.prepareRun(eventId, eventId);
      ids.push(rows![0]!.delivery.id);
    }
    return { endpointId, ids };
  }

  const health = async (endpointId: string) => {
    const row = await t.database.db('webhook_endpoint').where({ id: endpointId }).first('consecutive_failures', 'disabled_at', 'xmin');
    return { failures: row.consecutive_failures as number, disabled: row.disabled_at !== null, version: String(row.xmin) };
  };

  // threshold 0: never disables. `disabledBy`: the entry whose FAILED disabled the endpoint.
  it.each([
    { name: 'failures add up', outcomes: ['FAILED', 'FAILED'], threshold: 0, before: 1, failures: 3, disabled: false, disabledBy: null },
    {
      name: 'the run reaches the threshold',
      outcomes: ['FAILED', 'FAILED', 'FAILED'],
      threshold: 3,
      before: 0,
      failures: 3,
      disabled: true,
      disabledBy: 2,
    },
    {
      name: 'it reaches it with earlier failures',
      outcomes: ['FAILED', 'FAILED'],
      threshold: 3,
      before: 1,
      failures: 3,
      disabled: true,
      disabledBy: 1,
    },
    {
      name: 'a SUCCESS resets: only the failures after it count',
      outcomes: ['FAILED', 'SUCCESS', 'FAILED'],
      threshold: 0,
      before: 5,
      failures: 1,
      disabled: false,
      disabledBy: null,
    },
    {
      name: 'a SUCCESS after the run reached the threshold resets the count, not the disable',
      outcomes: ['FAILED', 'FAILED', 'SUCCESS'],
      threshold: 2,
      before: 1,
      failures: 0,
      disabled: true,
      disabledBy: 0,
    },
    {
      name: 'the run after a SUCCESS starts from 0',
      outcomes: ['SUCCESS', 'FAILED', 'FAILED'],
      threshold: 2,
      before: 5,
      failures: 2,
      disabled: true,
      disabledBy: 2,
    },
    {
      name: 'retries and skipped attempts do not count',
      outcomes: ['RETRYING', 'SKIPPED', 'RETRYING'],
      threshold: 2,
      before: 1,
      failures: 1,
      disabled: false,
      disabledBy: null,
    },
    {
      name: 'an endpoint already disabled is not disabled again',
      outcomes: ['FAILED', 'FAILED'],
      threshold: 2,
      before: 2,
      startDisabled: true,
      failures: 4,
      disabled: true,
      disabledBy: null,
    },
  ] satisfies Array<{
    name: string;
    outcomes: Outcome[];
    threshold: number;
    before: number;
    startDisabled?: boolean;
    failures: number;
    disabled: boolean;
    disabledBy: number | null;
  }>)('endpoint health: $name, as one by one', async ({ outcomes, threshold, before, startDisabled, failures, disabled, disabledBy }) => {
    const together = await arrange({ outcomes, threshold, before, disabled: startDisabled });
    const settled = await t.repos.deliveries.recordAttempts(together.ids.map((id, i) => ({ id, result: result(outcomes[i]!) })));
    expect(settled.map((s) => s?.autoDisabled)).toEqual(outcomes.map((_, i) => i === disabledBy));
    expect(await health(together.endpointId)).toMatchObject({ failures, disabled });

    const oneByOne = await arrange({ outcomes, threshold, before, disabled: startDisabled });
    for (const [i, id] of oneByOne.ids.entries()) await t.repos.deliveries.recordAttempt(id, result(outcomes[i]!));
    expect(await health(oneByOne.endpointId)).toMatchObject({ failures, disabled });
  });

  it('outcomes of two endpoints in one statement count for each endpoint apart', async () => {
    const a = await arrange({ outcomes: ['FAILED', 'FAILED'], threshold: 2, before: 0 });
    const b = await arrange({ outcomes: ['FAILED', 'SUCCESS'], threshold: 2, before: 1 });
    const settled = await t.repos.deliveries.recordAttempts([
      { id: a.ids[0]!, result: result('FAILED') },
      { id: b.ids[0]!, result: result('FAILED') },
      { id: a.ids[1]!, result: result('FAILED') },
      { id: b.ids[1]!, result: result('SUCCESS') },
    ]);
    // b's first FAILED brought it to 2: disabled, then its SUCCESS reset the count
    expect(settled.map((x) => x?.autoDisabled)).toEqual([false, true, true, false]);
    expect(await health(a.endpointId)).toMatchObject({ failures: 2, disabled: true });
    expect(await health(b.endpointId)).toMatchObject({ failures: 0, disabled: true });
  });

  it('two workers recording concurrent failures in batches count each one and disable once', async () => {
    const outcomes: Outcome[] = Array.from({ length: 40 }, () => 'FAILED');
    const { endpointId, ids } = await arrange({ outcomes, threshold: 25, before: 0 });
    const workers = [
      createAttemptRecorder({ deliveries: t.repos.deliveries, maxBatch: 7 }),
      createAttemptRecorder({ deliveries: t.repos.deliveries, maxBatch: 7 }),
    ];
    const settled = await Promise.all(ids.map((id, i) => workers[i % 2]!(id, result('FAILED'))));
    expect(settled.filter((x) => x?.autoDisabled)).toHaveLength(1);
    expect(await health(endpointId)).toMatchObject({ failures: 40, disabled: true });
  });

  it('a SUCCESS on a healthy endpoint writes no endpoint row, as one by one', async () => {
    const { endpointId, ids } = await arrange({ outcomes: ['SUCCESS', 'SUCCESS'], threshold: 3, before: 0 });
    const before = await health(endpointId);
    await t.repos.deliveries.recordAttempts(ids.map((id) => ({ id, result: result('SUCCESS') })));
    expect(await health(endpointId)).toEqual(before);
  });

  it('each row, its attempt log line and its answer: a row another run settled first is left alone and answers null', async () => {
    const { ids } = await arrange({ outcomes: ['SUCCESS', 'RETRYING', 'FAILED'], threshold: 0, before: 0 });
    const [a, b, c] = ids as [string, string, string];
    // b had one attempt already; c was settled by another run
    await t.repos.deliveries.recordAttempt(b, result('RETRYING'));
    await t.repos.deliveries.recordAttempt(c, result('SUCCESS'));

    const settled = await t.repos.deliveries.recordAttempts([
      { id: a, result: result('SUCCESS') },
      { id: b, result: result('RETRYING') },
      { id: c, result: result('FAILED') },
    ]);
    expect(settled).toEqual([{ autoDisabled: false }, { autoDisabled: false }, null]);
    expect(await t.repos.deliveries.get(a)).toMatchObject({ status: 'SUCCESS', attempts: 1, lastResponseStatus: 200, lastError: null });
    expect(await t.repos.deliveries.get(b)).toMatchObject({
      status: 'PENDING',
      attempts: 2,
      lastResponseStatus: 500,
      lastError: 'error RETRYING',
    });
    expect(await t.repos.deliveries.get(c)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    const log = await t.database
      .db('webhook_delivery_attempt')
      .whereIn('delivery_id', ids)
      .orderBy(['delivery_id', 'attempt'])
      .select('delivery_id', 'attempt', 'outcome', 'response_status', 'response_body', 'error', 'duration_ms', 'started_at');
    const of = (id: string) => log.filter((l) => l.delivery_id === id).map(({ delivery_id: _, ...l }) => l);
    const startedAt = new Date('2026-11-26T00:00:00.000Z');
    expect(of(a)).toEqual([
      {
        attempt: 1,
        outcome: 'SUCCESS',
        response_status: 200,
        response_body: 'body SUCCESS',
        error: null,
        duration_ms: 12,
        started_at: startedAt,
      },
    ]);
    expect(of(b).map((l) => [l.attempt, l.outcome])).toEqual([
      [1, 'RETRYING'],
      [2, 'RETRYING'],
    ]);
    expect(of(c).map((l) => [l.attempt, l.outcome])).toEqual([[1, 'SUCCESS']]);
  });

  it('no entries: no statement', async () => {
    const seen: string[] = [];
    const count = (q: { sql: string }) => seen.push(q.sql);
    t.database.db.on('query', count);
    try {
      expect(await t.repos.deliveries.recordAttempts([])).toEqual([]);
    } finally {
      t.database.db.off('query', count);
    }
    expect(seen).toEqual([]);
  });
});
