import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, headers } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForBuilds } from '../support/builds.js';
import { startNats, type NatsServer } from '../support/nats.js';

// Debian's nats-server, installed by the background queue (scripts/tools/builds.sh)
await waitForBuilds('nats');

/** The NATS the destination tests start (test/support/nats.ts), JetStream on, read back with NATS's own client. */
describe('the test NATS (Debian nats-server, JetStream on)', () => {
  let nats: NatsServer;
  beforeAll(async () => {
    nats = await startNats();
  }, 60_000);
  afterAll(async () => {
    await nats?.stop();
  });

  it('acknowledges a JetStream publish, drops a second one with the same Nats-Msg-Id, and a consumer reads it back', async () => {
    const nc = await connect({ servers: nats.url, user: nats.username, pass: nats.password });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'SMOKE', subjects: ['smoke.>'] });
      const js = jetstream(nc);
      const h = headers();
      h.set('ce-id', 'evt-1');
      const first = await js.publish('smoke.orders', '{"hello":"nats"}', { msgID: 'evt-1', headers: h });
      const again = await js.publish('smoke.orders', '{"hello":"nats"}', { msgID: 'evt-1', headers: h });
      expect(first).toMatchObject({ stream: 'SMOKE', seq: 1, duplicate: false });
      expect(again).toMatchObject({ seq: 1, duplicate: true });
      const msg = await jsm.streams.getMessage('SMOKE', { seq: 1 });
      expect(msg?.string()).toBe('{"hello":"nats"}');
      expect(msg?.header.get('ce-id')).toBe('evt-1');
      expect((await jsm.streams.info('SMOKE')).state.messages).toBe(1);
    } finally {
      await nc.close();
    }
  });

  it('refuses a wrong password', async () => {
    await expect(connect({ servers: nats.url, user: nats.username, pass: 'wrong', reconnect: false })).rejects.toThrow(/Authorization/i);
  });
});
