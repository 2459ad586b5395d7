import { createHmac, randomBytes } from 'node:crypto';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import type { SignatureType, SignatureVerification } from '../../src/domain/records.js';

/**
 * How each provider signs a webhook, by its own library where it has one that signs (stripe's
 * generateTestHeaderString, @octokit/webhooks-methods' sign, standardwebhooks' Webhook.sign), by
 * its documented recipe otherwise (Shopify, Slack: their libraries only verify; the recipes are
 * checked against @shopify/shopify-api's webhooks.validate and Slack's published example in
 * test/unit/ingest/signatures.test.ts), and a generic HMAC.
 */
export interface Provider {
  type: SignatureType;
  /** the source name the tests give it */
  source: string;
  secret: string;
  other: string;
  hmac?: SignatureVerification['hmac'];
  timestamped: boolean;
  /** the headers the provider sends with this body, signed with `secret` at `ts` (seconds) */
  sign(body: string, secret: string, ts: number): Promise<Record<string, string>>;
  /** the same headers with a wrong signature before the right one (schemes that carry several) */
  withWrongFirst?(headers: Record<string, string>): Record<string, string>;
  /** an event body as the provider sends it, and where its id and type are read from by default */
  event(n: number): { body: string; headers: Record<string, string>; id: string; type: string };
}

const stripe = new Stripe('sk_test_unused');
export const whsec = (): string => `whsec_${randomBytes(24).toString('base64')}`;
const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

export const PROVIDERS: Provider[] = [
  {
    type: 'Stripe',
    source: 'stripe',
    secret: whsec(),
    other: whsec(),
    timestamped: true,
    sign: async (payload, secret, timestamp) => ({
      'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp }),
    }),
    withWrongFirst: (h) => {
      const [t, v1] = (h['stripe-signature'] ?? '').split(',');
      return { 'stripe-signature': `${t},v1=${hex(32)},${v1},v0=${hex(32)}` };
    },
    event: (n) => ({
      body: JSON.stringify({
        id: `evt_${n}`,
        object: 'event',
        type: 'invoice.paid',
        data: { object: { id: `in_${n}`, amount_paid: 1200 } },
      }),
      headers: {},
      id: `evt_${n}`,
      type: 'invoice.paid',
    }),
  },
  {
    type: 'GitHub',
    source: 'github',
    secret: "It's a Secret to Everybody",
    other: 'another secret',
    timestamped: false,
    sign: async (payload, secret) => ({ 'x-hub-signature-256': await githubSign(secret, payload) }),
    event: (n) => ({
      body: JSON.stringify({ ref: 'refs/heads/main', after: hex(20), repository: { full_name: 'acme/app' } }),
      headers: {
        'x-github-delivery': `72d3162e-cc78-11e3-81ab-4c9367dc0958-${n}`,
        'x-github-event': 'push',
        'x-github-hook-id': '292430182',
      },
      id: `72d3162e-cc78-11e3-81ab-4c9367dc0958-${n}`,
      type: 'push',
    }),
  },
  {
    type: 'Shopify',
    source: 'shopify',
    secret: `shpss_${hex(16)}`,
    other: `shpss_${hex(16)}`,
    timestamped: false,
    // shopify.dev, "Verify webhooks": base64 of HMAC-SHA256 of the raw body with the app's client secret
    sign: async (payload, secret) => ({ 'x-shopify-hmac-sha256': createHmac('sha256', secret).update(payload).digest('base64') }),
    event: (n) => ({
      body: JSON.stringify({ id: 820982911946154500 + n, email: 'jon@example.com', total_price: '199.00' }),
      headers: {
        'x-shopify-topic': 'orders/create',
        'x-shopify-event-id': `98880550-7158-44d4-b7cd-2c97c8a091b${n}`,
        'x-shopify-webhook-id': `b54557e4-bdd9-4b37-8a5f-bf7d70bcd04${n}`,
        'x-shopify-shop-domain': 'acme.myshopify.com',
      },
      id: `98880550-7158-44d4-b7cd-2c97c8a091b${n}`,
      type: 'orders/create',
    }),
  },
  {
    type: 'Slack',
    source: 'slack',
    secret: hex(16),
    other: hex(16),
    timestamped: true,
    // api.slack.com, "Verifying requests from Slack": v0= hex HMAC-SHA256 of "v0:{timestamp}:{body}"
    sign: async (payload, secret, ts) => ({
      'x-slack-request-timestamp': String(ts),
      'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:${payload}`).digest('hex')}`,
    }),
    event: (n) => ({
      body: JSON.stringify({
        type: 'event_callback',
        team_id: 'T1',
        event_id: `Ev0${n}ABCDEF`,
        event: { type: 'app_mention', text: 'hi' },
      }),
      headers: {},
      id: `Ev0${n}ABCDEF`,
      type: 'app_mention',
    }),
  },
  {
    type: 'StandardWebhooks',
    source: 'standard',
    secret: whsec(),
    other: whsec(),
    timestamped: true,
    sign: async (payload, secret, ts) => {
      // the message id is part of what is signed; the event's own headers carry the same one
      const id = /"msg":"([^"]+)"/.exec(payload)?.[1] ?? 'msg_unset';
      return {
        'webhook-id': id,
        'webhook-timestamp': String(ts),
        'webhook-signature': new Webhook(secret).sign(id, new Date(ts * 1000), payload),
      };
    },
    withWrongFirst: (h) => ({
      ...h,
      'webhook-signature': `v1,${randomBytes(32).toString('base64')} v1a,${randomBytes(64).toString('base64')} ${h['webhook-signature']}`,
    }),
    event: (n) => ({
      body: JSON.stringify({ type: 'user.created', msg: `msg_2Lh9${n}`, data: { id: `u_${n}` } }),
      headers: {},
      id: `msg_2Lh9${n}`,
      type: 'user.created',
    }),
  },
  {
    type: 'HMAC',
    source: 'acme-hmac',
    secret: 'generic-secret',
    other: 'generic-other',
    hmac: { header: 'x-acme-signature', algorithm: 'sha512', encoding: 'base64', prefix: 'sha512=' },
    timestamped: false,
    sign: async (payload, secret) => ({ 'x-acme-signature': `sha512=${createHmac('sha512', secret).update(payload).digest('base64')}` }),
    withWrongFirst: (h) => ({ 'x-acme-signature': `sha512=${randomBytes(64).toString('base64')}, ${h['x-acme-signature']}` }),
    event: (n) => ({
      body: JSON.stringify({ id: `acme-${n}`, type: 'thing.happened' }),
      headers: {},
      id: `acme-${n}`,
      type: 'thing.happened',
    }),
  },
];

export const provider = (type: SignatureType): Provider => {
  const p = PROVIDERS.find((x) => x.type === type);
  if (!p) throw new Error(`no provider ${type}`);
  return p;
};

/** The InboundCredential spec.verification of a provider, its secrets in the Secret `secretName`. */
export function verificationYaml(p: Provider, secretName: string, keys: string[]): string {
  const refs = keys.map((k) => `{name: ${secretName}, key: ${k}}`).join(', ');
  const hmac = p.hmac
    ? `, header: ${p.hmac.header}, algorithm: ${p.hmac.algorithm}, encoding: ${p.hmac.encoding}, prefix: "${p.hmac.prefix}"`
    : '';
  return `{type: ${p.type}, secretRefs: [${refs}]${hmac}}`;
}
