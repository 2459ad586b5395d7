import { BlockList, isIP } from 'node:net';
import { parseCidr } from '../delivery/address-policy.js';

/**
 * The address of the client a request comes from: the TCP peer, unless that peer is a trusted
 * proxy (INGEST_TRUSTED_PROXIES), whose X-Forwarded-For or RFC 7239 Forwarded header then says
 * who it forwards. What the refusal limits count, and what logs and traces name.
 *
 * Each proxy appends the address it received the request from, so the header reads left to right
 * from the client towards us, and only its right end was written by proxies we trust: everything
 * to the left of the first untrusted hop is the client's own text. So the hops are walked from the
 * right (the peer first), over every trusted one, and the first untrusted hop is the client
 * (proxy-addr's rule, which fastify's trustProxy uses; it reads X-Forwarded-For only, hence this).
 *
 * Falls back to the peer, and says why, when a hop that would be walked over is not an address
 * (`malformed`), or when the request carries both headers and they name different clients
 * (`conflicting`): a proxy that writes one of them passes the other through from the client, who
 * could otherwise name any address it likes (and have another sender's limits spent). Behind a
 * proxy, the peer is the proxy: a fallback never gives the client an address of its choosing.
 */
export interface ClientAddress {
  address: string;
  /** where the address was read: the TCP peer, or a forwarding header from a trusted peer */
  from: 'peer' | 'x-forwarded-for' | 'forwarded' | 'malformed' | 'conflicting';
}

export type ResolveClientAddress = (peer: string | undefined, headers: Record<string, string | string[] | undefined>) => ClientAddress;

/** "::ffff:10.0.0.1" -> "10.0.0.1"; brackets and zone ids dropped: one spelling per address for counting. */
function canonical(ip: string): string {
  let a = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const zone = a.indexOf('%');
  if (zone !== -1) a = a.slice(0, zone);
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(a);
  return mapped?.[1] ?? a.toLowerCase();
}

/** A hop of X-Forwarded-For or a Forwarded `for=`: an address, with a port or brackets as some proxies write it; undefined when it is none. */
function hopAddress(text: string): string | undefined {
  let t = text.trim();
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(t);
  if (bracketed?.[1] !== undefined) t = bracketed[1];
  else if (/^\d{1,3}(?:\.\d{1,3}){3}:\d{1,5}$/.test(t)) t = t.slice(0, t.lastIndexOf(':'));
  return isIP(t.split('%')[0] ?? '') === 0 ? undefined : canonical(t);
}

const header = (headers: Record<string, string | string[] | undefined>, name: string): string | undefined => {
  const v = headers[name];
  // Node joins repeated X-Forwarded-For lines with ", "; an array is joined the same way
  return Array.isArray(v) ? v.join(', ') : v;
};

/** The `for=` values of a Forwarded header, left to right (undefined for an element without one); null when it does not parse. */
export function forwardedFor(value: string): Array<string | undefined> | null {
  const out: Array<string | undefined> = [];
  let i = 0;
  const n = value.length;
  const skipSpace = () => {
    while (i < n && (value[i] === ' ' || value[i] === '\t')) i++;
  };
  let current: string | undefined;
  let empty = true;
  while (i <= n) {
    skipSpace();
    if (i >= n) {
      if (!empty) out.push(current);
      break;
    }
    if (value[i] === ',') {
      out.push(current);
      current = undefined;
      empty = true;
      i++;
      continue;
    }
    if (value[i] === ';') {
      i++;
      continue;
    }
    const name = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+/.exec(value.slice(i))?.[0];
    if (!name || value[i + name.length] !== '=') return null;
    i += name.length + 1;
    let v: string;
    if (value[i] === '"') {
      i++;
      let s = '';
      while (i < n && value[i] !== '"') {
        if (value[i] === '\\') i++;
        s += value[i] ?? '';
        i++;
      }
      if (value[i] !== '"') return null;
      i++;
      v = s;
    } else {
      const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z:[\]]*/.exec(value.slice(i))?.[0] ?? '';
      i += token.length;
      v = token;
    }
    empty = false;
    if (name.toLowerCase() === 'for') current = v;
    skipSpace();
    if (i < n && value[i] !== ',' && value[i] !== ';') return null;
  }
  return out;
}

/** The trusted proxies, as INGEST_TRUSTED_PROXIES lists them (CIDRs or single addresses); throws naming a bad entry. */
export function createClientAddressResolver(trustedProxies: readonly string[]): ResolveClientAddress {
  if (trustedProxies.length === 0) return (peer) => ({ address: canonical(peer ?? ''), from: 'peer' });
  const trusted = new BlockList();
  for (const entry of trustedProxies) {
    const cidr = parseCidr(entry, 'INGEST_TRUSTED_PROXIES');
    trusted.addSubnet(cidr.address, cidr.prefix, cidr.family);
  }
  const isTrusted = (ip: string): boolean => trusted.check(ip, isIP(ip) === 6 ? 'ipv6' : 'ipv4');

  /** The first untrusted hop from the right; null when a hop walked over is not an address. */
  const rightmostUntrusted = (hops: Array<string | undefined>): string | null => {
    for (let k = hops.length - 1; k >= 0; k--) {
      const text = hops[k];
      const ip = text === undefined ? undefined : hopAddress(text);
      if (ip === undefined) return null;
      if (!isTrusted(ip) || k === 0) return ip;
    }
    return null;
  };

  return (peerRaw, headers) => {
    const peer = canonical(peerRaw ?? '');
    if (isIP(peer) === 0 || !isTrusted(peer)) return { address: peer, from: 'peer' };
    const xff = header(headers, 'x-forwarded-for');
    const fwd = header(headers, 'forwarded');
    if (xff === undefined && fwd === undefined) return { address: peer, from: 'peer' };
    const byXff = xff === undefined ? undefined : rightmostUntrusted(xff.split(','));
    const fwdHops = fwd === undefined ? undefined : forwardedFor(fwd);
    const byFwd = fwdHops === undefined ? undefined : fwdHops === null ? null : rightmostUntrusted(fwdHops);
    if (byXff === null || byFwd === null) return { address: peer, from: 'malformed' };
    if (byXff !== undefined && byFwd !== undefined && byXff !== byFwd) return { address: peer, from: 'conflicting' };
    if (byXff !== undefined) return { address: byXff, from: 'x-forwarded-for' };
    if (byFwd !== undefined) return { address: byFwd, from: 'forwarded' };
    return { address: peer, from: 'peer' };
  };
}
