import type { LookupAddress } from 'node:dns';
import { afterEach, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import type { Resolve } from '../../src/delivery/guarded-lookup.js';
import { createHttpSender, type HttpSender } from './outbound.js';
import { outbound } from './outbound.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((fn) => fn()));
});

function track<T extends HttpSender | Receiver>(x: T): T {
  cleanup.push(() => x.close());
  return x;
}

describe('address policy', () => {
  const policy = createAddressPolicy();

  it('allows loopback and private ranges by default (endpoints live in the cluster)', () => {
    for (const ip of ['127.0.0.1', '10.0.0.1', '10.96.12.7', '172.16.5.4', '192.168.1.10', '::1', 'fd12:3456::1', '93.184.215.14']) {
      expect(policy.isAllowed(ip), ip).toBe(true);
    }
  });

  it('refuses link-local and cloud metadata addresses by default, in every spelling', () => {
    for (const ip of [
      '169.254.169.254',
      '169.254.0.1',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '[::ffff:169.254.169.254]',
      'fd00:ec2::254',
      'fd00:ec2:0:0:0:0:0:254',
      'fe80::1',
      'fe80::1%eth0',
      'febf::1',
    ]) {
      expect(policy.isAllowed(ip), ip).toBe(false);
    }
  });

  it('never allows something that is not an IP address', () => {
    expect(policy.isAllowed('metadata.google.internal')).toBe(false);
    expect(policy.isAllowed('')).toBe(false);
  });

  it('applies a configured deny list, IPv4 rules also to IPv4-mapped IPv6', () => {
    const p = createAddressPolicy({ deny: ['10.0.0.0/8', '2001:db8::/32', '192.168.7.7'] });
    expect(p.isAllowed('10.1.2.3')).toBe(false);
    expect(p.isAllowed('::ffff:10.1.2.3')).toBe(false);
    expect(p.isAllowed('2001:db8:1::5')).toBe(false);
    expect(p.isAllowed('192.168.7.7')).toBe(false);
    expect(p.isAllowed('192.168.7.8')).toBe(true);
    expect(p.isAllowed('11.0.0.1')).toBe(true);
  });

  it('an explicit allow entry wins over the default and configured deny, and only for what it lists', () => {
    const p = createAddressPolicy({ deny: ['10.0.0.0/8'], allow: ['169.254.10.0/24', '10.20.0.0/16'] });
    expect(p.isAllowed('169.254.10.5')).toBe(true);
    expect(p.isAllowed('169.254.169.254')).toBe(false);
    expect(p.isAllowed('10.20.1.1')).toBe(true);
    expect(p.isAllowed('10.21.1.1')).toBe(false);
  });

  it.each([
    ['10.0.0.0/33', 'deny'],
    ['not-an-ip/8', 'deny'],
    ['10.0.0.0/', 'deny'],
    ['10.0.0.0/8/8', 'deny'],
    ['::1/129', 'allow'],
    ['', 'allow'],
  ])('a bad CIDR %j in the %s list throws a clear error', (cidr, list) => {
    const make = () => createAddressPolicy(list === 'deny' ? { deny: [cidr] } : { allow: [cidr] });
    expect(make).toThrow(`invalid CIDR ${JSON.stringify(cidr)} in ${list} list`);
  });
});

describe('sender with the SSRF guard', () => {
  it('refuses http://169.254.169.254/latest/meta-data as blocked, permanently, without connecting', async () => {
    const sender = track(createHttpSender({ addressPolicy: createAddressPolicy() }));
    const outcome = await sender.send(outbound('http://169.254.169.254/latest/meta-data', { timeoutMs: 2_000 }));
    // a connection attempt would have ended as timeout, refused or an answer, not as blocked
    expect(outcome).toMatchObject({ kind: 'permanent', status: null, body: null, statusClass: 'blocked' });
    expect(outcome.kind !== 'success' && outcome.error).toContain('169.254.169.254');
    expect(outcome.durationMs).toBeLessThan(100);
  });

  it.each(['http://[::ffff:169.254.169.254]/latest/meta-data', 'http://[fd00:ec2::254]/latest', 'http://2852039166/latest'])(
    'refuses the metadata service spelled %s',
    async (url) => {
      const sender = track(createHttpSender({ addressPolicy: createAddressPolicy() }));
      const outcome = await sender.send(outbound(url, { timeoutMs: 2_000 }));
      expect(outcome).toMatchObject({ kind: 'permanent', statusClass: 'blocked' });
    },
  );

  it('checks the resolved address of a host name: localhost is blocked when 127.0.0.0/8 is denied', async () => {
    const receiver = track(await startReceiver());
    const open = track(createHttpSender({ addressPolicy: createAddressPolicy() }));
    const guarded = track(createHttpSender({ addressPolicy: createAddressPolicy({ deny: ['127.0.0.0/8', '::1/128'] }) }));

    // the same URL does reach the receiver under the default policy
    expect(await open.send(outbound(`http://localhost:${receiver.port}/hook`))).toMatchObject({ kind: 'success' });
    expect(receiver.requests).toHaveLength(1);
    const connectionsBefore = receiver.connections();

    const outcome = await guarded.send(outbound(`http://localhost:${receiver.port}/hook`));
    expect(outcome).toMatchObject({ kind: 'permanent', status: null, statusClass: 'blocked' });
    expect(outcome.kind !== 'success' && outcome.error).toMatch(/resolved from localhost/);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.connections()).toBe(connectionsBefore);
  });

  it('checks an IP literal host before sending', async () => {
    const receiver = track(await startReceiver());
    const guarded = track(createHttpSender({ addressPolicy: createAddressPolicy({ deny: ['127.0.0.1/32'] }) }));
    const outcome = await guarded.send(outbound(receiver.url));
    expect(outcome).toMatchObject({ kind: 'permanent', statusClass: 'blocked' });
    expect(receiver.connections()).toBe(0);
  });

  it('refuses a host name whose DNS answer is a metadata address, even among allowed ones', async () => {
    const receiver = track(await startReceiver());
    const answers: Record<string, LookupAddress[]> = {
      'hooks.example.test': [{ address: '127.0.0.1', family: 4 }],
      'sneaky.example.test': [
        { address: '127.0.0.1', family: 4 },
        { address: '169.254.169.254', family: 4 },
      ],
    };
    const resolve: Resolve = async (hostname) => answers[hostname] ?? [];
    const sender = track(createHttpSender({ addressPolicy: createAddressPolicy(), resolve }));

    expect(await sender.send(outbound(`http://hooks.example.test:${receiver.port}/`))).toMatchObject({ kind: 'success' });
    expect(receiver.requests[0]!.headers.host).toBe(`hooks.example.test:${receiver.port}`);

    const outcome = await sender.send(outbound(`http://sneaky.example.test:${receiver.port}/`));
    expect(outcome).toMatchObject({ kind: 'permanent', statusClass: 'blocked' });
    expect(receiver.requests).toHaveLength(1);
  });

  it('checks every new connection: a DNS answer that changes to a metadata address (rebinding) is blocked', async () => {
    // Connection: close forces a new connection, hence a new lookup, for the next attempt
    const receiver = track(
      await startReceiver({
        handler: (_req, res) => {
          res.setHeader('Connection', 'close');
          res.end('ok');
        },
      }),
    );
    let lookups = 0;
    const resolve: Resolve = async () => {
      lookups++;
      return [{ address: lookups === 1 ? '127.0.0.1' : '169.254.169.254', family: 4 }];
    };
    const sender = track(createHttpSender({ addressPolicy: createAddressPolicy(), resolve }));
    const url = `http://rebind.example.test:${receiver.port}/`;

    expect(await sender.send(outbound(url))).toMatchObject({ kind: 'success' });
    expect(await sender.send(outbound(url, { meta: { ...outbound(url).meta, attempt: 2 } }))).toMatchObject({
      kind: 'permanent',
      statusClass: 'blocked',
    });
    expect(lookups).toBe(2);
    expect(receiver.requests).toHaveLength(1);
  });
});
