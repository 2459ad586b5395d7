import { BASE } from './base.js';

// Every link the console renders is built here, to its own routes on its own origin: nothing that
// comes from the API (URLs, headers, payloads) ever becomes an href.

export type Query = Record<string, string | number | undefined | null>;

/** A same-origin path of the console, made only by `to.*` below: components take Href, not string. */
export type Href = string & { readonly __consoleRoute: true };

function withQuery(path: string, q: Query = {}): Href {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const s = params.toString();
  return (s ? `${path}?${s}` : path) as Href;
}

const id = (v: string) => encodeURIComponent(v);

export const to = {
  overview: (q?: Query) => withQuery(`${BASE}/`, q),
  events: (q?: Query) => withQuery(`${BASE}/events`, q),
  event: (eventId: string) => withQuery(`${BASE}/events/${id(eventId)}`),
  deliveries: (q?: Query) => withQuery(`${BASE}/deliveries`, q),
  delivery: (deliveryId: string) => withQuery(`${BASE}/deliveries/${id(deliveryId)}`),
  replay: (q?: Query) => withQuery(`${BASE}/replay`, q),
  endpoints: (q?: Query) => withQuery(`${BASE}/endpoints`, q),
  credentials: (q?: Query) => withQuery(`${BASE}/credentials`, q),
  signedOut: () => withQuery(`${BASE}/signed-out`),
};

/** Route patterns (preact-iso), relative to nothing: the console's paths carry BASE. */
export const ROUTES = {
  overview: `${BASE}/`,
  events: `${BASE}/events`,
  event: `${BASE}/events/:id`,
  deliveries: `${BASE}/deliveries`,
  delivery: `${BASE}/deliveries/:id`,
  replay: `${BASE}/replay`,
  endpoints: `${BASE}/endpoints`,
  credentials: `${BASE}/credentials`,
} as const;
