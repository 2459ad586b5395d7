import { compileFilter, type CompiledFilter, type CompileResult } from './filter.js';
import { compileTransform, type CompiledTransform } from './transform.js';
import { compileOrderingKey, type CompiledOrderingKey } from './ordering-key.js';

/**
 * Compiled filters, transforms and ordering keys by their text, for the worker: an endpoint's expression is
 * compiled on its first event and reused after (compiling costs more than evaluating). Bounded:
 * the least recently used is dropped past `max` texts of each kind.
 */
export interface ExpressionCache {
  filter(text: string): CompileResult<CompiledFilter>;
  transform(text: string): CompileResult<CompiledTransform>;
  orderingKey(text: string): CompileResult<CompiledOrderingKey>;
}

function lru<T>(max: number, make: (text: string) => T): (text: string) => T {
  const entries = new Map<string, T>();
  return (text) => {
    const hit = entries.get(text);
    if (hit !== undefined) {
      entries.delete(text);
      entries.set(text, hit);
      return hit;
    }
    const made = make(text);
    entries.set(text, made);
    if (entries.size > max) entries.delete(entries.keys().next().value as string);
    return made;
  };
}

export function createExpressionCache(max = 1000): ExpressionCache {
  return { filter: lru(max, compileFilter), transform: lru(max, compileTransform), orderingKey: lru(max, compileOrderingKey) };
}
