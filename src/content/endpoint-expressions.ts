import { permanent } from '../domain/errors.js';
import { compileFilter, formatExpressionError } from './filter.js';
import { compileTransform } from './transform.js';

/** The two expressions of a WebhookEndpoint spec, as written. */
export interface EndpointExpressionSpec {
  filter?: string | undefined;
  transform?: { jsonata: string } | undefined;
}

/** Each problem of an endpoint's expressions, as `validate` lists them and `Ready=False` says the first. */
export function expressionProblems(spec: EndpointExpressionSpec): Array<{ code: 'invalid_filter' | 'invalid_transform'; message: string }> {
  const problems: Array<{ code: 'invalid_filter' | 'invalid_transform'; message: string }> = [];
  if (spec.filter !== undefined) {
    const f = compileFilter(spec.filter);
    if (!f.ok) problems.push({ code: 'invalid_filter', message: `spec.filter ${formatExpressionError(f.error)}` });
  }
  if (spec.transform !== undefined) {
    const t = compileTransform(spec.transform.jsonata);
    if (!t.ok) problems.push({ code: 'invalid_transform', message: `spec.transform.jsonata ${formatExpressionError(t.error)}` });
  }
  return problems;
}

/** Throws the first problem as a permanent error: Ready=False InvalidFilter / InvalidTransform, the row left as it was. */
export function assertEndpointExpressions(spec: EndpointExpressionSpec): void {
  const [problem] = expressionProblems(spec);
  if (problem) throw permanent(problem.code, problem.message);
}
