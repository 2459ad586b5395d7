import { compileCel, formatExpressionError, type CompileResult } from './filter.js';
import type { ContentEvent } from './event-view.js';

/**
 * A WebhookEndpoint's `spec.ordering.key` (docs/ordering.md): CEL over the same `event` a filter
 * sees, with a filter's checks and bounds (content/filter.ts), giving the key of an event's
 * delivery. Compiled once per text (expression-cache.ts), evaluated per event in prepare.
 */

/** The key, or why the event has none: it then goes into the endpoint's no-key sequence. */
export type OrderingKeyOutcome = { key: string } | { error: string };

export interface CompiledOrderingKey {
  readonly source: string;
  keyOf(event: ContentEvent): OrderingKeyOutcome;
}

/** What CEL gave, in words, when it is not a string. */
function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'bigint') return 'an int';
  if (typeof v === 'number') return 'a double';
  if (typeof v === 'boolean') return 'a bool';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'a map or message' : typeof v;
}

/** Longest key kept: a longer value is cut (a sequence is still one per value of its first 1024 characters). */
export const ORDERING_KEY_MAX_LENGTH = 1024;

export function compileOrderingKey(text: string): CompileResult<CompiledOrderingKey> {
  const compiled = compileCel(text);
  if (!compiled.ok) return compiled;
  const evaluate = compiled.value;
  return {
    ok: true,
    value: {
      source: text,
      keyOf(event) {
        const out = evaluate(event);
        if ('error' in out) return out;
        if (typeof out.value !== 'string') return { error: `the key gave ${kindOf(out.value)}, not a string` };
        return { key: out.value.slice(0, ORDERING_KEY_MAX_LENGTH) };
      },
    },
  };
}

/** `Ready=False` and `validate`: "spec.ordering.key at 1:11: ..." */
export const orderingKeyProblem = (text: string): string | undefined => {
  const c = compileOrderingKey(text);
  return c.ok ? undefined : `spec.ordering.key ${formatExpressionError(c.error)}`;
};
