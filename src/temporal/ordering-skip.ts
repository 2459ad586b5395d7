import type { Wake } from '../db/ordering.js';
import type { ReplayQueries, ReplayTarget } from '../db/replay-queries.js';
import type { Repositories } from '../db/repositories.js';
import type { TenantScope } from '../db/tenant-scope.js';
import { decodeOrderingKey } from '../domain/ordering.js';
import { describeError } from '../domain/errors.js';
import type { Logger } from '../observability/logger.js';

/** Wakes the run waiting for an ordered delivery's turn (its workflow id and the delivery). */
export type SignalTurn = (wake: Wake) => Promise<void>;

/** What skipping an ordered delivery came to, as a value: the admin API and a WebhookReplay each say it their way. */
export type SkipOutcome =
  /** it stopped holding its key; `next`: the delivery of its key woken, when one waited */
  | { outcome: 'skipped'; delivery: ReplayTarget; key: string | null | undefined; next: string | null }
  /** none the scope sees */
  | { outcome: 'not_found' }
  /** it no longer held its key: skipped before, or FAILED under onFailure Skip */
  | { outcome: 'already_skipped'; delivery: ReplayTarget }
  /** not a FAILED ordered delivery; `why` says what it is instead */
  | { outcome: 'not_skippable'; delivery: ReplayTarget; why: string };

export interface OrderingSkipDeps {
  replays: Pick<ReplayQueries, 'target'>;
  ordering: Pick<Repositories['ordering'], 'skip'>;
  signalTurn: SignalTurn;
  logger: Logger;
}

/** Why a delivery the skip refused is not one that holds its key, in words a person acts on. */
function refusal(d: ReplayTarget): SkipOutcome {
  if (d.orderingPosition === null) {
    return {
      outcome: 'not_skippable',
      delivery: d,
      why: 'it is not ordered: its endpoint had no spec.ordering when it was made, and only an ordered delivery holds a key',
    };
  }
  if (d.orderingSkipped) return { outcome: 'already_skipped', delivery: d };
  if (d.status !== 'FAILED') {
    return { outcome: 'not_skippable', delivery: d, why: `it is ${d.status}: only a FAILED delivery holds its key` };
  }
  return { outcome: 'not_skippable', delivery: d, why: 'its key is not decided yet' };
}

/**
 * Skips an ordered delivery that holds its key after it FAILED (docs/ordering.md): the same for
 * `POST /api/deliveries/{id}/skip` and a WebhookReplay with action Skip. Scoped like every admin
 * read (what `scope` does not see is not found); the row changes in db/ordering.ts under its
 * lock; then the run waiting behind it is signalled. Should that signal not reach Temporal, the
 * consumer's ordering waker wakes it (within about 15 s), so the skip stands either way.
 */
export async function skipOrderedDelivery(deps: OrderingSkipDeps, scope: TenantScope, id: string, actor: string): Promise<SkipOutcome> {
  const d = await deps.replays.target(scope, id);
  if (!d) return { outcome: 'not_found' };
  const skipped = await deps.ordering.skip(id);
  if (skipped === 'not_skippable') return refusal((await deps.replays.target(scope, id)) ?? d);
  deps.logger.info({ deliveryId: id, eventId: d.eventId, actor }, 'ordered delivery skipped: its key moves on');
  if (skipped.wake) {
    await deps.signalTurn(skipped.wake).catch((err: unknown) => {
      deps.logger.warn(
        { deliveryId: id, wake: skipped.wake, err: describeError(err) },
        'skip: the next delivery was not signalled; the waker will',
      );
    });
  }
  return { outcome: 'skipped', delivery: d, key: decodeOrderingKey(d.orderingKey), next: skipped.wake?.deliveryId ?? null };
}

/** Skips `deliveryId` as the admin API does, scoped to one namespace: a WebhookReplay's (docs/operator.md). */
export type SkipInNamespace = (namespace: string, deliveryId: string, actor: string) => Promise<SkipOutcome>;

export const skipInNamespace =
  (deps: OrderingSkipDeps): SkipInNamespace =>
  (namespace, deliveryId, actor) =>
    skipOrderedDelivery(deps, { namespaces: [namespace] }, deliveryId, actor);
