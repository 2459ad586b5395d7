import { isIP } from 'node:net';
import { normalizeIp, type AddressPolicy } from '../delivery/address-policy.js';
import { checkLiteralHost, systemResolve, type Resolve } from '../delivery/guarded-lookup.js';
import type { BrokerFailure } from './broker-outcome.js';

/** "host:port", "[v6]:port" or a URL: the host a broker client will dial. */
export function hostOf(address: string): string {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(address)) return new URL(address).hostname;
  const v6 = /^\[([^\]]+)\]/.exec(address);
  if (v6?.[1] !== undefined) return v6[1];
  const colon = address.lastIndexOf(':');
  return colon > 0 && address.indexOf(':') === colon ? address.slice(0, colon) : address;
}

/**
 * Whether every host a broker client is about to dial is one the outbound address policy allows
 * (cloud-metadata and link-local addresses are refused, as for HTTP): an IP literal directly, a
 * name by every address it resolves to now. Kafka's and NATS's clients take no `lookup` to check
 * at connect time, so the destinations ask before they publish (RabbitMQ's sockets also resolve
 * through the guarded lookup). A refusal is the registry's `address_blocked`, final.
 */
export async function refusedBrokerHost(
  policy: AddressPolicy,
  hosts: Iterable<string>,
  resolve: Resolve = systemResolve,
): Promise<BrokerFailure | null> {
  for (const host of new Set(hosts)) {
    const literal = checkLiteralHost(policy, host);
    if (literal) return { code: 'address_blocked', detail: literal.message };
    // an address is what it is: no lookup (one per publish otherwise, through libuv's thread pool)
    if (isIP(normalizeIp(host)) !== 0) continue;
    let addresses;
    try {
      addresses = await resolve(host, { all: true });
    } catch {
      // not resolvable now: the client's connect fails and says so (unavailable, retried)
      continue;
    }
    const blocked = addresses.find((a) => !policy.isAllowed(a.address));
    if (blocked)
      return {
        code: 'address_blocked',
        detail: `address ${blocked.address} (resolved from ${host}) is blocked by the outbound address policy`,
      };
  }
  return null;
}
