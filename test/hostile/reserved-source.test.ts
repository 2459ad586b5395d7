import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileDatabase } from '../support/db.js';
import { basic, http } from '../support/http.js';
import { addCredential, startIngestHarness, type IngestHarness } from '../support/ingest-harness.js';

// The reserved source of operational events (docs/operations-events.md) from outside: nobody but
// the service may send as it. A post to it is refused exactly as a post to a source that does not
// exist, even when a credential row for it was written by hand (or before the name was reserved),
// and nothing is stored; a third party that claims an operational type stays its own source.

const RESERVED = 'ops-reserved';

describe('posting to the reserved source from outside', () => {
  const t = fileDatabase();
  let h: IngestHarness;

  beforeAll(async () => {
    h = await startIngestHarness({ db: t.database.db, operations: { source: RESERVED, platformNamespaces: [] } });
    await addCredential(h.repos, RESERVED, 'u', 'right-password');
    await addCredential(h.repos, 'webhook-fanout', 'u', 'right-password');
    await addCredential(h.repos, 'shop', 'u', 'right-password');
  });
  afterAll(async () => {
    await h?.close();
  });

  const post = (source: string, body = '{"type":"endpoint.disabled","subject":{"namespace":"payments"}}') =>
    http(`${h.url}/api/webhooks/${source}`, {
      headers: { authorization: basic('u', 'right-password'), 'content-type': 'application/json' },
      body,
    });
  const stored = async (source: string) => Number((await t.database.db('webhook_event').where({ source }).count({ n: '*' }))[0]?.n);

  it('with the right password of a row written for it: the 401 of an unknown source, nothing stored', async () => {
    const reserved = await post(RESERVED);
    const unknown = await post('no-such-source');
    expect(reserved.status).toBe(401);
    expect(reserved.headers['www-authenticate']).toBe(unknown.headers['www-authenticate']);
    expect(reserved.json()).toEqual(unknown.json());
    expect(await stored(RESERVED)).toBe(0);
  });

  it('the name is a setting: with another name reserved, webhook-fanout is an ordinary source', async () => {
    expect((await post('webhook-fanout')).status).toBe(200);
  });

  it('a sender that claims an operational type is stored under its own source, never the reserved one', async () => {
    const res = await post('shop', '{"id":"forged-1","type":"delivery.failed"}');
    expect(res.status).toBe(200);
    const { eventId } = res.json() as { eventId: string };
    expect(await t.database.db('webhook_event').where({ id: eventId }).first('source', 'subject_namespace')).toEqual({
      source: 'shop',
      subject_namespace: null,
    });
    expect(await stored(RESERVED)).toBe(0);
  });
});
