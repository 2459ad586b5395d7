import type { paths } from './openapi-types.js';

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
export type Delivery = Ok<'/api/deliveries/{id}', 'get'>;
export type Endpoint = Ok<'/api/endpoints', 'get'>['items'][number];
export type BulkReplayResult = Ok<'/api/deliveries/replay', 'post'>;
export type EventStatus = EventSummary['status'];
export type DeliveryStatus = Delivery['status'];

export const EVENT_STATUSES: readonly EventStatus[] = ['RECEIVED', 'COMPLETED', 'PARTIAL', 'FAILED'];
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['PENDING', 'SUCCESS', 'FAILED'];

export type Timeseries = Ok<'/api/stats/timeseries', 'get'>;
export type Attention = Ok<'/api/stats/attention', 'get'>;
export type StatsBucket = Timeseries['bucket'];

export type EventDetail = Ok<'/api/events/{id}', 'get'>;
export type EndpointWithoutDelivery = EventDetail['endpointsWithoutDelivery'][number];
