import { isCelList, isCelMap, isCelUint } from '@bufbuild/cel';
import { compileCelAs, formatExpressionError, type CompileResult } from './filter.js';
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

/** What CEL gave, in words, when it is not a string (the CEL type's name). */
function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'bigint') return 'an int';
  if (isCelUint(v)) return 'a uint';
  if (typeof v === 'number') return 'a double';
  if (typeof v === 'boolean') return 'a bool';
  if (v instanceof Uint8Array) return 'bytes';
  if (isCelList(v)) return 'a list';
  if (isCelMap(v)) return 'a map';
  return typeof v === 'object' ? 'a message' : typeof v;
}

/** Longest key kept: a longer value is cut (a sequence is still one per value of its first 1024 characters). */
export const ORDERING_KEY_MAX_LENGTH = 1024;

const keyOutcome = (value: unknown): OrderingKeyOutcome =>
  typeof value === 'string' ? { key: value.slice(0, ORDERING_KEY_MAX_LENGTH) } : { error: `the key gave ${kindOf(value)}, not a string` };

export function compileOrderingKey(text: string): CompileResult<CompiledOrderingKey> {
  const compiled = compileCelAs(text, 'key', keyOutcome);
  return compiled.ok ? { ok: true, value: { source: text, keyOf: compiled.value } } : compiled;
}

/** `Ready=False` and `validate`: "spec.ordering.key at 1:11: ..." */
export const orderingKeyProblem = (text: string): string | undefined => {
  const c = compileOrderingKey(text);
  return c.ok ? undefined : `spec.ordering.key ${formatExpressionError(c.error)}`;
};
