// The leader election's timing apart from the elector: the configuration of every process reads
// it, and the elector's module loads @kubernetes/client-node (through ./api.js), whose code and
// source maps held about 25 MB of V8 heap and 80 MB of RSS in ingest, the consumer and the worker,
// none of which talks to Kubernetes (issue 12).

/** client-go's defaults scaled down for a small controller: 15 s lease, 10 s renew deadline, 2 s retry. */
export const LEADER_ELECTION_TIMING = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;

/** A leader must give up (renewDeadline) before others may take over (leaseDuration), and retry within it. */
export const validLeaderElectionTiming = (t: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number }): boolean =>
  t.leaseDurationMs > t.renewDeadlineMs && t.renewDeadlineMs > t.retryPeriodMs;
