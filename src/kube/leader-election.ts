import type { Logger } from '../observability/logger.js';
import { isAlreadyExists, isConflict, isNotFound, microTime, type KubeApi } from './api.js';
import { validLeaderElectionTiming } from '../config/settings.js';
import { describeError } from '../domain/errors.js';

/**
 * Leader election on a coordination.k8s.io/v1 Lease, the algorithm of client-go's leaderelection:
 * - a candidate acquires the Lease when nobody holds it, or when the holder's record has not
 *   changed for leaseDuration as observed by this candidate's own clock (no clock-skew trust);
 * - the leader renews every retryPeriod and steps down when it could not renew for renewDeadline
 *   (before leaseDuration passes, so two leaders never overlap as long as clocks run at the same
 *   rate);
 * - every write carries the resourceVersion it read, so two candidates can not both win;
 * - release() on graceful shutdown empties holderIdentity, so a standby takes over at its next
 *   retry instead of waiting out the lease.
 */
export interface LeaderElectionOptions {
  api: KubeApi;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  logger: Logger;
  onStartedLeading: () => void | Promise<void>;
  onStoppedLeading: () => void | Promise<void>;
  onNewLeader?: (identity: string) => void;
}

interface LeaseSpec {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number;
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseTransitions?: number;
}

interface Lease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: LeaseSpec;
}

export interface LeaderElector {
  isLeader(): boolean;
  /** the current holder as last observed */
  leader(): string | undefined;
  /** runs until stop(): campaigns, leads, and campaigns again after losing the lease */
  run(): Promise<void>;
  /** stops campaigning; a leader calls onStoppedLeading and releases the lease */
  stop(): Promise<void>;
}

export function createLeaderElector(o: LeaderElectionOptions): LeaderElector {
  if (!validLeaderElectionTiming(o)) {
    throw new Error('leader election needs leaseDuration > renewDeadline > retryPeriod');
  }
  const path = `/apis/coordination.k8s.io/v1/namespaces/${o.namespace}/leases`;
  let leading = false;
  let stopped = false;
  let observed: { record: string; at: number; holder: string | undefined } | undefined;
  let wake: (() => void) | undefined;
  let running: Promise<void> | undefined;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(t);
        wake = undefined;
        resolve();
      };
    });

  const observe = (lease: Lease | undefined) => {
    const holder = lease?.spec.holderIdentity || undefined;
    const record = JSON.stringify(lease?.spec ?? {});
    if (observed?.record !== record) {
      if (observed?.holder !== holder && holder !== undefined && holder !== o.identity) o.onNewLeader?.(holder);
      observed = { record, at: Date.now(), holder };
    }
  };

  /** one attempt to acquire or renew; true when this candidate holds the lease afterwards */
  async function tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    let lease: Lease | undefined;
    try {
      lease = await o.api.get<Lease>(`${path}/${o.name}`);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const durationSeconds = Math.max(1, Math.ceil(o.leaseDurationMs / 1000));
    if (!lease) {
      const created: Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: o.name, namespace: o.namespace },
        spec: {
          holderIdentity: o.identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: 0,
        },
      };
      try {
        observe(await o.api.create<Lease>(path, created));
        return true;
      } catch (err) {
        if (isAlreadyExists(err) || isConflict(err)) return false;
        throw err;
      }
    }
    observe(lease);
    const holder = lease.spec.holderIdentity || undefined;
    const iHold = holder === o.identity;
    if (!iHold && holder !== undefined && observed && Date.now() - observed.at < o.leaseDurationMs) {
      return false; // held by another candidate whose record still moves
    }
    const spec: LeaseSpec = {
      ...lease.spec,
      holderIdentity: o.identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: microTime(now),
    };
    if (!iHold) {
      spec.acquireTime = microTime(now);
      spec.leaseTransitions = (lease.spec.leaseTransitions ?? 0) + 1;
    }
    try {
      observe(await o.api.replace<Lease>(`${path}/${o.name}`, { ...lease, spec }));
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }

  async function lead(): Promise<void> {
    leading = true;
    o.logger.info({ lease: `${o.namespace}/${o.name}`, identity: o.identity }, 'became leader');
    try {
      await o.onStartedLeading();
    } catch (err) {
      o.logger.error({ err: describeError(err) }, `failed to start leading: ${describeError(err)}`);
    }
    let lastRenew = Date.now();
    while (!stopped) {
      await sleep(o.retryPeriodMs);
      if (stopped) break;
      try {
        if (await tryAcquireOrRenew()) {
          lastRenew = Date.now();
          continue;
        }
        o.logger.warn({ holder: observed?.holder }, 'lost the lease to another candidate');
        break;
      } catch (err) {
        o.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'failed to renew the lease');
        if (Date.now() - lastRenew >= o.renewDeadlineMs) {
          o.logger.error(`could not renew the lease for ${o.renewDeadlineMs} ms; stepping down`);
          break;
        }
      }
    }
    leading = false;
    try {
      await o.onStoppedLeading();
    } catch (err) {
      o.logger.error({ err }, 'failed to stop leading');
    }
  }

  async function release(): Promise<void> {
    try {
      const lease = await o.api.get<Lease>(`${path}/${o.name}`);
      if (lease.spec.holderIdentity !== o.identity) return;
      const spec: LeaseSpec = { ...lease.spec, holderIdentity: null, leaseDurationSeconds: 1, renewTime: microTime() };
      await o.api.replace<Lease>(`${path}/${o.name}`, { ...lease, spec });
      o.logger.info('released the lease');
    } catch (err) {
      o.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'failed to release the lease');
    }
  }

  async function loop(): Promise<void> {
    while (!stopped) {
      let acquired = false;
      try {
        acquired = await tryAcquireOrRenew();
      } catch (err) {
        o.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'leader election: could not read or write the lease');
      }
      if (acquired && !stopped) {
        await lead();
        continue;
      }
      if (!stopped) await sleep(o.retryPeriodMs);
    }
  }

  return {
    isLeader: () => leading,
    leader: () => observed?.holder,
    run() {
      stopped = false;
      running ??= loop().finally(() => (running = undefined));
      return running;
    },
    async stop() {
      stopped = true;
      const wasLeading = leading;
      wake?.();
      await running;
      if (wasLeading) await release();
    },
  };
}
