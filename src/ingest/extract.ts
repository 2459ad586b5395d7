import type { ExtractionRule, VerificationType } from '../domain/records.js';

const DEFAULT_ID: ExtractionRule[] = [{ jsonPath: 'id' }, { header: 'webhook-id' }, { header: 'x-event-id' }];
const DEFAULT_TYPE: ExtractionRule[] = [{ jsonPath: 'type' }, { header: 'x-event-type' }];
export const MAX_IDENTIFIER_LENGTH = 255;

/** Where each provider puts its event id and type (docs/sources.md); a source's own rules win. */
const PROVIDER_DEFAULTS: Partial<Record<VerificationType, { id: ExtractionRule[]; type: ExtractionRule[] }>> = {
  Stripe: { id: [{ jsonPath: 'id' }], type: [{ jsonPath: 'type' }] },
  GitHub: { id: [{ header: 'x-github-delivery' }], type: [{ header: 'x-github-event' }] },
  Shopify: { id: [{ header: 'x-shopify-event-id' }, { header: 'x-shopify-webhook-id' }], type: [{ header: 'x-shopify-topic' }] },
  Slack: { id: [{ jsonPath: 'event_id' }], type: [{ jsonPath: 'event.type' }, { jsonPath: 'type' }] },
  StandardWebhooks: { id: [{ header: 'webhook-id' }], type: [{ jsonPath: 'type' }] },
};

function fromJson(body: unknown, path: string): string | undefined {
  let cur: unknown = body;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  if (typeof cur === 'string' && cur !== '') return cur;
  if (typeof cur === 'number' && Number.isFinite(cur)) return String(cur);
  return undefined;
}

function firstMatch(rules: ExtractionRule[], json: unknown, headers: Record<string, string>): string | undefined {
  for (const rule of rules) {
    if (rule.jsonPath !== undefined && json !== undefined) {
      const v = fromJson(json, rule.jsonPath);
      if (v !== undefined) return v;
    }
    if (rule.header !== undefined) {
      const v = headers[rule.header.toLowerCase()];
      if (v !== undefined && v !== '') return v;
    }
  }
  return undefined;
}

/**
 * External event id and event type, by the source's rules or the defaults of docs/decisions.md:
 * the provider's own places for a signed source (GitHub's X-GitHub-Delivery, ...), then JSON body
 * fields `id` / `type`, then headers Webhook-Id / X-Event-Id and X-Event-Type.
 * `json` is the parsed body, or undefined when the body is not JSON.
 */
export function extractIdentity(
  json: unknown,
  headers: Record<string, string>,
  rules: { eventId: ExtractionRule | null; eventType: ExtractionRule | null },
  /** the source's verification type: its provider's places come before the generic defaults */
  provider?: VerificationType,
): { externalEventId: string | null; eventType: string | null } {
  const own = provider === undefined ? undefined : PROVIDER_DEFAULTS[provider];
  const idRules = rules.eventId ? [rules.eventId] : own ? [...own.id, ...DEFAULT_ID] : DEFAULT_ID;
  const typeRules = rules.eventType ? [rules.eventType] : own ? [...own.type, ...DEFAULT_TYPE] : DEFAULT_TYPE;
  return {
    externalEventId: firstMatch(idRules, json, headers) ?? null,
    eventType: firstMatch(typeRules, json, headers) ?? null,
  };
}
