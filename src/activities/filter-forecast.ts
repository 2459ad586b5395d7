/**
 * Which filtered endpoints' delivery rows prepare inserts before their filter has decided
 * (docs/content-routing.md, "What a filter costs"). A filter is evaluated in the worker, after
 * prepare's statement brought the payload; the rows of the endpoints it accepts, or the rows it
 * refuses, then take a second statement. Inserting up front the rows of the endpoints whose filter
 * accepted most of their recent events makes the common outcome of each endpoint the one without
 * that statement: a filter that lets most events through costs its evaluation, and so does one
 * that lets few through.
 *
 * Per worker process, from the outcomes it saw: no endpoint is forecast before its first outcome,
 * and a wrong forecast costs the statement the endpoint would have cost without one.
 */
export interface FilterForecast {
  /** the endpoints expected to accept the next event (at most MAX_LIKELY of them) */
  likely(): string[];
  /** what an endpoint's filter said of an event (an evaluation error: refused) */
  note(endpointId: string, accepted: boolean): void;
}

/** How much an outcome moves an endpoint's share of accepted events (a moving average). */
const WEIGHT = 0.2;
/** Endpoints remembered; beyond it the one heard of longest ago is forgotten. */
const MAX_REMEMBERED = 2_000;
/** The statement's parameter stays small however many endpoints have filters. */
export const MAX_LIKELY = 500;

export function createFilterForecast(): FilterForecast {
  /** endpoint id -> its share of accepted events; in the order last heard of (oldest first) */
  const share = new Map<string, number>();
  let likelyIds: string[] | undefined;
  return {
    likely() {
      if (likelyIds === undefined) {
        likelyIds = [];
        // the most recently heard of first, so the cap keeps the endpoints in use
        for (const [id, s] of [...share].reverse()) {
          if (s < 0.5) continue;
          likelyIds.push(id);
          if (likelyIds.length === MAX_LIKELY) break;
        }
      }
      return likelyIds;
    },
    note(endpointId, accepted) {
      const before = share.get(endpointId);
      const now = before === undefined ? Number(accepted) : before + WEIGHT * (Number(accepted) - before);
      share.delete(endpointId);
      share.set(endpointId, now);
      if (share.size > MAX_REMEMBERED) {
        const oldest = share.keys().next();
        if (!oldest.done) share.delete(oldest.value);
      }
      if (before === undefined || before >= 0.5 !== now >= 0.5 || share.size > MAX_LIKELY) likelyIds = undefined;
    },
  };
}
