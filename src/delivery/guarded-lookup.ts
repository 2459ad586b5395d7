import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import { AppError } from '../domain/errors.js';
import type { AddressPolicy } from './address-policy.js';
import { normalizeIp } from './address-policy.js';

/** Resolves a host name to every address it has; injectable so tests can stand in for DNS. */
export type Resolve = (hostname: string, options: LookupOptions) => Promise<LookupAddress[]>;

export const systemResolve: Resolve = (hostname, options) => dnsLookup(hostname, { ...options, all: true });

/** Raised when the address a request would connect to is refused by the SSRF policy. */
export class BlockedAddressError extends AppError {
  readonly address: string;

  constructor(address: string, hostname: string) {
    const via = hostname === address ? '' : ` (resolved from ${hostname})`;
    super('address_blocked', `address ${address}${via} is blocked by the outbound address policy`);
    this.name = 'BlockedAddressError';
    this.address = address;
  }
}

export function isBlockedAddressError(err: unknown): err is BlockedAddressError {
  return err instanceof BlockedAddressError;
}

/**
 * A `lookup` for net/tls connect: resolves, then refuses the connection if ANY resolved address
 * is blocked. Checking at connect time, on the addresses the socket will actually use, leaves no
 * gap between check and use (DNS rebinding), and covers every new connection of every attempt.
 */
export function createGuardedLookup(policy: AddressPolicy, resolve: Resolve = systemResolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, options).then(
      (addresses) => {
        const blocked = addresses.find((a) => !policy.isAllowed(a.address));
        if (blocked) {
          callback(new BlockedAddressError(blocked.address, hostname), '');
          return;
        }
        const first = addresses[0];
        if (options.all) callback(null, addresses);
        else if (first) callback(null, first.address, first.family);
        else callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '');
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

/**
 * Connecting to an IP literal skips `lookup`, so such a host is checked here before sending.
 * `hostname` is URL.hostname (IPv6 in brackets). Returns the error to report, or null.
 */
export function checkLiteralHost(policy: AddressPolicy, hostname: string): BlockedAddressError | null {
  const address = normalizeIp(hostname);
  if (isIP(address) === 0) return null;
  return policy.isAllowed(address) ? null : new BlockedAddressError(address, address);
}

/**
 * For a request a forward proxy will connect for us (it resolves the name itself, so our lookup
 * never runs): resolves the host and returns the error when ANY of its addresses is refused, before
 * the proxy is asked. A DNS failure is thrown as the resolver raised it. The proxy's own lookup
 * may differ (docs/deploy.md, "A static egress address": what the proxy must refuse as well).
 */
export async function checkResolvedHost(
  policy: AddressPolicy,
  hostname: string,
  resolve: Resolve = systemResolve,
): Promise<BlockedAddressError | null> {
  const literal = checkLiteralHost(policy, hostname);
  if (literal !== null || isIP(normalizeIp(hostname)) !== 0) return literal;
  const addresses = await resolve(hostname, { all: true });
  if (addresses.length === 0) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  const blocked = addresses.find((a) => !policy.isAllowed(a.address));
  return blocked ? new BlockedAddressError(blocked.address, hostname) : null;
}
