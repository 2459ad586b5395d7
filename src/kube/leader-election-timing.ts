// The leader election's timing, apart from the elector: config/config.ts reads and checks it for
// every process, and importing the elector would load @kubernetes/client-node (through ./api.ts)
// into the worker, consumer and ingest, which never talk to Kubernetes (and its heap with it).

/** client-go's defaults scaled down for a small controller: 15 s lease, 10 s renew deadline, 2 s retry. */
export const LEADER_ELECTION_TIMING = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;

/** A leader must give up (renewDeadline) before others may take over (leaseDuration), and retry within it. */
export const validLeaderElectionTiming = (t: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number }): boolean =>
  t.leaseDurationMs > t.renewDeadlineMs && t.renewDeadlineMs > t.retryPeriodMs;
