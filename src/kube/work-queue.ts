/**
 * A de-duplicating work queue of keys, in the manner of client-go's workqueue: a key is queued at
 * most once however many events name it; a key being processed is never handed to a second worker,
 * and an add while it is processed queues it again once done() is called. Failures are retried
 * with a per-key exponential backoff that forget() resets.
 */
export interface WorkQueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** called whenever the number of ready keys changes */
  onDepth?: (depth: number) => void;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private waiters: ((key: string | undefined) => void)[] = [];
  private shuttingDown = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly onDepth: (depth: number) => void;

  constructor(opts: WorkQueueOptions = {}) {
    this.baseDelayMs = opts.baseDelayMs ?? 500;
    this.maxDelayMs = opts.maxDelayMs ?? 5 * 60_000;
    this.onDepth = opts.onDepth ?? (() => {});
  }

  /** Queues the key unless it is already queued. Returns false when it was (or the queue is shut down). */
  add(key: string): boolean {
    if (this.shuttingDown || this.dirty.has(key)) return false;
    this.dirty.add(key);
    if (this.processing.has(key)) return true;
    const waiter = this.waiters.shift();
    if (waiter) {
      this.dirty.delete(key);
      this.processing.add(key);
      waiter(key);
    } else {
      this.queue.push(key);
      this.onDepth(this.queue.length);
    }
    return true;
  }

  /** Queues the key after delayMs; an earlier pending delayed add for the key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + delayMs;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.delayed.set(key, { at, timer });
  }

  /** Queues the key after its next backoff delay (base * 2^failures, capped); returns the delay. */
  addRateLimited(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const delay = Math.min(this.baseDelayMs * 2 ** n, this.maxDelayMs);
    this.addAfter(key, delay);
    return delay;
  }

  /** The key succeeded: its next failure starts the backoff again from the base delay. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** The next key to process; undefined once the queue is shut down. */
  get(): Promise<string | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const key = this.queue.shift();
    if (key !== undefined) {
      this.dirty.delete(key);
      this.processing.add(key);
      this.onDepth(this.queue.length);
      return Promise.resolve(key);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The worker finished the key; if it was added meanwhile, it is queued again. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.shuttingDown) {
      this.dirty.delete(key);
      this.add(key);
    }
  }

  get depth(): number {
    return this.queue.length;
  }

  get busy(): number {
    return this.processing.size;
  }

  shutDown(): void {
    this.shuttingDown = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w(undefined);
    this.queue.length = 0;
    this.dirty.clear();
    this.onDepth(0);
  }
}
