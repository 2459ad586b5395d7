// oidc-provider ships no type declarations: the small surface the dev identity provider uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface ClientMetadata {
    client_id: string;
    client_secret?: string;
    grant_types?: string[];
    response_types?: string[];
    redirect_uris?: string[];
    token_endpoint_auth_method?: string;
    /** private_key_jwt: the client's public keys */
    jwks?: { keys: JsonWebKey[] };
    scope?: string;
  }

  export interface ResourceServerInfo {
    scope: string;
    audience?: string;
    accessTokenTTL?: number;
    accessTokenFormat?: 'jwt' | 'opaque';
    jwt?: { sign?: { alg?: string; kid?: string } };
  }

  export interface ProviderClient {
    clientId: string;
  }

  export interface ProviderToken {
    clientId?: string;
    scope?: string;
  }

  export type JsonWebKey = Record<string, unknown> & { kid?: string; alg?: string };

  export interface Configuration {
    adapter?: new (model: string) => unknown;
    clients?: ClientMetadata[];
    jwks?: { keys: JsonWebKey[] };
    routes?: Record<string, string>;
    ttl?: Record<string, number | ((...args: unknown[]) => number)>;
    features?: Record<string, unknown>;
    scopes?: string[];
    claims?: Record<string, string[] | null>;
    cookies?: { keys?: string[] };
    extraTokenClaims?: (ctx: unknown, token: ProviderToken) => Promise<Record<string, unknown> | undefined>;
    renderError?: (ctx: unknown, out: Record<string, unknown>, error: Error) => Promise<void> | void;
  }

  export class Provider {
    constructor(issuer: string, configuration?: Configuration);
    issuer: string;
    proxy: boolean;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }

  export const errors: {
    InvalidTarget: new (description?: string) => Error;
  };

  export default Provider;
}
