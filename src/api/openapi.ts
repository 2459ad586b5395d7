import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { SOURCE_PATTERN } from '../custom-resources/specs.js';

// The OpenAPI 3.1 document: generated from the admin routes' schemas, plus the inbound webhook
// route, a sibling plugin (raw-body parsing of its own) that the swagger plugin inside the admin
// API does not see, and therefore described here by hand.

const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

type Paths = NonNullable<NonNullable<FastifyDynamicSwaggerOptions['openapi']>['paths']>;

const inboundWebhook: Paths[string] = {
  post: {
    tags: ['inbound'],
    summary: 'Receive a webhook from a third party',
    description:
      'HTTP Basic credentials of the source, or the signature of its provider over the raw body (Stripe-Signature, ' +
      'X-Hub-Signature-256, X-Shopify-Hmac-Sha256, X-Slack-Signature, webhook-signature, or a header of its own), or both, as ' +
      'its InboundCredential says (docs/sources.md). The raw body is stored byte-for-byte (any content type, default limit 1 MiB) and ' +
      'published; 200 means persisted and published. A repeated (source, external event id) answers 200 with the original id ' +
      'and `duplicate: true`. The external id and type are read per source: where its provider puts them, else from the JSON body fields `id` and ' +
      "`type`, then the headers `Webhook-Id` / `X-Event-Id` and `X-Event-Type`. Slack's url_verification and GitHub's ping are " +
      'answered 200 (the challenge, or {"ok": true}) and not stored.',
    security: [{ basicAuth: [] }],
    parameters: [{ name: 'source', in: 'path', required: true, schema: { type: 'string', pattern: SOURCE_PATTERN } }],
    requestBody: {
      required: false,
      content: { '*/*': { schema: { description: 'the third party payload, any content type' } } },
    },
    responses: {
      200: {
        description: 'Persisted and published (or a duplicate of an earlier event)',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['eventId', 'duplicate'],
              properties: { eventId: { type: 'string', format: 'uuid' }, duplicate: { type: 'boolean' } },
            },
          },
        },
      },
      400: problemResponse(
        'A body that claims JSON and is not, an empty body, malformed HTTP, a missing or second Host, a second Authorization',
      ),
      401: problemResponse(
        'Missing or bad credentials or signature, a stale signed timestamp, or an unknown source: one answer for all ' +
          '(WWW-Authenticate: Basic realm="webhooks"), no sooner than 250 ms after the request; presented Basic credentials ' +
          'that are wrong are refused before the body is read, with Connection: close',
      ),
      408: problemResponse('Headers or body not received within HTTP_HEADERS_TIMEOUT_SECONDS / HTTP_REQUEST_TIMEOUT_SECONDS'),
      413: problemResponse('Body larger than the limit'),
      417: problemResponse('An Expect header other than 100-continue'),
      431: problemResponse("Request line and headers over Node's 16 KiB"),
      503: problemResponse('Postgres or the topic is unavailable; retry after Retry-After (the sender retrying is safe)'),
    },
  },
};

export function openApiOptions(opts: { authUrl?: string; audience?: string }): FastifyDynamicSwaggerOptions {
  const tokenHelp = opts.authUrl
    ? `\n\nGet a token: \`POST ${opts.authUrl}/oauth/token\` with JSON \`{"client_id", "client_secret", ` +
      `"audience": "${opts.audience ?? '<AUTH_AUDIENCE>'}", "grant_type": "client_credentials"}\`.`
    : '';
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'webhook-fanout',
        version: '1',
        description:
          'Inbound webhooks (HTTP Basic per source) and the admin API (JWT bearer tokens of the identity provider, ' +
          'permissions `read:webhooks` and `replay:webhooks` in the `permissions` or `scope` claim). Errors are ' +
          'RFC 9457 application/problem+json. Lists answer `{"items": [...], "nextCursor": ...}`, newest first. ' +
          'A token carrying the namespaces claim (`https://webhookfanout.io/namespaces` unless AUTH_NAMESPACES_CLAIM names another) ' +
          "is a tenant's: every route answers only with its namespaces' endpoints, credentials, their deliveries and events, " +
          'and anything else as 404, exactly like an id that does not exist (docs/tenancy.md).' +
          tokenHelp,
      },
      tags: [
        { name: 'events', description: 'Received events' },
        { name: 'deliveries', description: 'One delivery per (event, endpoint)' },
        { name: 'replay', description: 'Deliver FAILED deliveries again' },
        { name: 'configuration', description: 'Endpoints and inbound credentials as reconciled (read only)' },
        { name: 'stats', description: "Aggregates for the console's overview" },
        { name: 'caller', description: 'Who the token is, as the API reads it' },
        { name: 'inbound', description: 'The third parties\u2019 entry point' },
      ],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          basicAuth: { type: 'http', scheme: 'basic' },
        },
        schemas: {
          Problem: {
            type: 'object',
            required: ['type', 'title', 'status', 'code'],
            properties: {
              type: { type: 'string' },
              title: { type: 'string' },
              status: { type: 'integer' },
              detail: { type: 'string' },
              code: { type: 'string' },
            },
          },
        },
      },
      paths: { '/api/webhooks/{source}': inboundWebhook },
    },
  };
}
