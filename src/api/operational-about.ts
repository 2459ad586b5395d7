import type { EventSummary } from './route-schemas.js';

export type OperationalAbout = NonNullable<EventSummary['about']>;

const utf8 = new TextDecoder('utf-8', { fatal: true });

const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

const field = (o: unknown, key: string): unknown =>
  typeof o === 'object' && o !== null && !Array.isArray(o) ? (o as Record<string, unknown>)[key] : undefined;

/**
 * What an operational event is about, read from its payload (docs/operations-events.md): the
 * endpoint it names (`endpoint`, in every type about one) and the delivery, where there is one
 * (`delivery.id` of delivery.failed, `disabledBy.deliveryId` of endpoint.disabled, `deliveryId` of
 * ordering.*). The endpoint's name as the API names endpoints, `<namespace>/<name>`. Null: no payload
 * (another source's event, or dropped), not JSON, or naming neither. Pure.
 */
export function operationalAbout(payload: Buffer | null | undefined): OperationalAbout | null {
  if (!payload || payload.length === 0) return null;
  let p: unknown;
  try {
    p = JSON.parse(utf8.decode(payload));
  } catch {
    return null;
  }
  const e = field(p, 'endpoint');
  const id = text(field(e, 'id'));
  const name = text(field(e, 'name'));
  const namespace = text(field(e, 'namespace'));
  const endpoint = id && name ? { id, name: namespace ? `${namespace}/${name}` : name } : null;
  const deliveryId =
    text(field(field(p, 'delivery'), 'id')) ?? text(field(field(p, 'disabledBy'), 'deliveryId')) ?? text(field(p, 'deliveryId'));
  return endpoint || deliveryId ? { endpoint, deliveryId } : null;
}
