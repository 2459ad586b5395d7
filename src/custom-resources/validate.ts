import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { credentialRuleProblem, InboundCredentialSpec } from './specs.js';

/**
 * The first problem of a resource spec against its schema, as one line naming the field
 * ("spec.maxAttempts: must be >= 1"), or undefined when it is valid. Dev mode's manifest reader
 * and the operator's reconciler report the same words for the same mistake. A schema node may
 * carry its own `errorMessage` (e.g. the endpoint URL's "no credentials in the URL"), which wins
 * over the validator's generic wording.
 */
export function specProblem(schema: TSchema, spec: unknown): string | undefined {
  const errors = Value.Errors(schema, spec);
  // "additionalProperties: false" also yields a bare "schema is false" per extra field; the
  // additionalProperties error names them all, so it is the one to show
  const first = errors.find((e) => e.keyword !== 'boolean') ?? errors[0];
  if (!first) return undefined;
  const own = (nodeAt(schema, first.schemaPath) as { errorMessage?: unknown } | undefined)?.errorMessage;
  const extra = first.keyword === 'additionalProperties' ? extraNames(first.params) : '';
  const message = typeof own === 'string' ? own : `${first.message}${extra}`;
  return `spec${first.instancePath.replace(/\//g, '.')}: ${message}`;
}

/** The schema node a JSON pointer ("#/properties/url") names, if any. */
function nodeAt(schema: TSchema, pointer: string): unknown {
  let node: unknown = schema;
  for (const raw of pointer
    .replace(/^#\/?/, '')
    .split('/')
    .filter((p) => p !== '')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function extraNames(params: unknown): string {
  const names = (params as { additionalProperties?: unknown }).additionalProperties;
  return Array.isArray(names) && names.length > 0 ? ` (${names.join(', ')})` : '';
}

/** specProblem for an InboundCredential, then the rules its CRD states in CEL (custom-resources/specs.ts). */
export function credentialSpecProblem(spec: unknown): string | undefined {
  return specProblem(InboundCredentialSpec, spec) ?? credentialRuleProblem(spec as InboundCredentialSpec);
}
