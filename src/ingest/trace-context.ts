/**
 * A sender's traceparent: the parent of the inbound span (one trace from the sender's request to
 * every delivery), a link from a trace of our own (a sender's sampling decision and trace
 * boundaries stay out of ours), or ignored.
 */
export const INBOUND_TRACE_CONTEXTS = ['parent', 'link', 'ignore'] as const;
export type InboundTraceContext = (typeof INBOUND_TRACE_CONTEXTS)[number];
