import type { EndpointWithoutDelivery } from '../api/types.js';

// An event's page, under its deliveries: the endpoints of its (source, type) that got none, and
// why as far as the API knows (GET /api/events/{id}, docs/content-routing.md). Names and filters
// come from resources a tenant writes: text nodes only.

const REASONS: Record<EndpointWithoutDelivery['reason'], string> = {
  FILTER_NOT_MATCHED: 'filter did not match this event',
  FANOUT_IN_PROGRESS: 'not known yet: the fan-out of this event is under way',
  CREATED_AFTER_EVENT: 'created after this event was received',
  NOT_ALLOWED_BY_SOURCE: "not allowed by its source's credential: nothing is sent to it",
  NO_DELIVERY: 'no delivery; its configuration now does not say why (it was configured otherwise when the event was routed)',
};

export function EndpointsWithoutDelivery({ items, omitted }: { items: readonly EndpointWithoutDelivery[]; omitted: number }) {
  if (items.length === 0) return null;
  // before prepare ran every endpoint is without a delivery: one line says so, not a list of them
  if (items.every((e) => e.reason === 'FANOUT_IN_PROGRESS')) {
    return <p class="muted">The fan-out of this event is under way: which endpoints get no delivery is shown once it has routed it.</p>;
  }
  return (
    <div class="without-delivery">
      <h3 id="without-delivery-heading" class="subheading">
        Endpoints without a delivery
      </h3>
      <p class="muted">
        Endpoints of this event's source and type, as they are configured now, that got no delivery of it. A filter that fails on an event
        counts as not matched; each reason reads the endpoint as it is now, and the filter shown is its current one.
      </p>
      <ul aria-labelledby="without-delivery-heading">
        {items.map((e) => (
          <li key={e.endpointId}>
            <strong>{e.name}</strong>: <span>{REASONS[e.reason]}</span>
            {e.reason === 'FILTER_NOT_MATCHED' && e.filter !== null && (
              <>
                <br />
                <span class="muted">filter </span>
                <code class="mono break">{e.filter}</code>
              </>
            )}
          </li>
        ))}
      </ul>
      {omitted > 0 && <p class="muted">{omitted} more not listed.</p>}
    </div>
  );
}
