import type { paths } from './schema.js';

// Names for the shapes the console shows, read off the generated API types.

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type Ok<P extends keyof paths, M extends 'get' | 'post'> = paths[P][M] extends { responses: infer R }
  ? R extends { 200: infer A }
    ? Json<A>
    : R extends { 202: infer B }
      ? Json<B>
      : never
  : never;

export type EventPage = Ok<'/api/events', 'get'>;
export type EventSummary = EventPage['items'][number];
export type EventDetail = Ok<'/api/events/{id}', 'get'>;
export type Delivery = Ok<'/api/deliveries/{id}', 'get'>;
export type DeliveryPage = Ok<'/api/deliveries', 'get'>;
export type Attempt = Ok<'/api/deliveries/{id}/attempts', 'get'>['items'][number];
export type Endpoint = Ok<'/api/endpoints', 'get'>['items'][number];
export type Credential = Ok<'/api/inbound-credentials', 'get'>['items'][number];
export type BulkReplayResult = Ok<'/api/deliveries/replay', 'post'>;
export type EventStatus = EventSummary['status'];
export type DeliveryStatus = Delivery['status'];

export const EVENT_STATUSES: readonly EventStatus[] = ['RECEIVED', 'COMPLETED', 'PARTIAL', 'FAILED'];
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['PENDING', 'SUCCESS', 'FAILED'];

// ---- until the stats routes are in the generated types (console-api's GET /api/stats/*) -------
export interface Timeseries {
  from: string;
  to: string;
  bucket: string;
  bucketSeconds: number;
  buckets: string[];
  eventsBySource: Array<{ source: string; counts: number[]; total: number }>;
  sourcesOmitted: number;
  deliveriesByOutcome: { SUCCESS: number[]; FAILED: number[] };
  endpoints: Array<{
    endpointId: string;
    name: string;
    source: string;
    completed: number[];
    failed: number[];
    failureRate: Array<number | null>;
    latencyP50Ms: Array<number | null>;
    latencyP95Ms: Array<number | null>;
    total: { completed: number; failed: number; failureRate: number | null; latencyP50Ms: number | null; latencyP95Ms: number | null };
  }>;
  endpointsOmitted: number;
}
