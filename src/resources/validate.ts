import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';

/**
 * The first problem of a resource spec against its schema, as one line naming the field
 * ("spec.maxAttempts: must be >= 1"), or undefined when it is valid. Dev mode's manifest reader
 * and the operator's reconciler report the same words for the same mistake.
 */
export function specProblem(schema: TSchema, spec: unknown): string | undefined {
  const errors = Value.Errors(schema, spec);
  // "additionalProperties: false" also yields a bare "schema is false" per extra field; the
  // additionalProperties error names them all, so it is the one to show
  const first = errors.find((e) => e.keyword !== 'boolean') ?? errors[0];
  if (!first) return undefined;
  const extra = first.keyword === 'additionalProperties' ? extraNames(first.params) : '';
  return `spec${first.instancePath.replace(/\//g, '.')}: ${first.message}${extra}`;
}

function extraNames(params: unknown): string {
  const names = (params as { additionalProperties?: unknown }).additionalProperties;
  return Array.isArray(names) && names.length > 0 ? ` (${names.join(', ')})` : '';
}
