/**
 * Whether an endpoint's filter is expected to accept its next event (docs/content-routing.md, "What
 * a filter costs"). A filter is evaluated in the worker, after prepare's statement brought the
 * payload; the rows of the endpoints it accepts, or the rows it refuses, then take a second
 * statement. Prepare's statement inserts up front the rows of the endpoints whose row says their
 * filter is expected to accept (webhook_endpoint.filter_expects_accept), so that each filter's
 * usual answer costs its evaluation only; a surprise costs the second statement, which also
 * writes the expectations that changed.
 *
 * Per worker: a moving average of each endpoint's answers, started from what its row says when
 * the worker first hears of it (so a new worker goes on from what the others found).
 */
export interface FilterForecast {
  /**
   * Notes what an endpoint's filter said of an event (an evaluation error: refused) and returns
   * whether its next event is expected to be accepted. `stored`: what the endpoint's row says.
   */
  note(endpointId: string, accepted: boolean, stored: boolean): boolean;
}

/** How much an answer moves an endpoint's share of accepted events (a moving average). */
const WEIGHT = 0.2;
/** Endpoints remembered; beyond it the one heard of longest ago starts again from its row. */
const MAX_REMEMBERED = 2_000;

export function createFilterForecast(): FilterForecast {
  /** endpoint id -> its share of accepted events; in the order last heard of (oldest first) */
  const share = new Map<string, number>();
  return {
    note(endpointId, accepted, stored) {
      const before = share.get(endpointId) ?? Number(stored);
      const now = before + WEIGHT * (Number(accepted) - before);
      share.delete(endpointId);
      share.set(endpointId, now);
      if (share.size > MAX_REMEMBERED) {
        const oldest = share.keys().next();
        if (!oldest.done) share.delete(oldest.value);
      }
      return now >= 0.5;
    },
  };
}
