import { permanent } from '../domain/errors.js';
import { compileFilter, formatExpressionError } from './filter.js';
import { compileTransform } from './transform.js';
import { orderingKeyProblem } from './ordering-key.js';

/** The expressions of a WebhookEndpoint spec, as written. */
export interface EndpointExpressionSpec {
  filter?: string | undefined;
  transform?: { jsonata: string } | undefined;
  ordering?: { key?: string | undefined } | undefined;
}

type ExpressionProblemCode = 'invalid_filter' | 'invalid_transform' | 'invalid_ordering_key';

/** Each problem of an endpoint's expressions, as `validate` lists them and `Ready=False` says the first. */
export function expressionProblems(spec: EndpointExpressionSpec): Array<{ code: ExpressionProblemCode; message: string }> {
  const problems: Array<{ code: ExpressionProblemCode; message: string }> = [];
  if (spec.filter !== undefined) {
    const f = compileFilter(spec.filter);
    if (!f.ok) problems.push({ code: 'invalid_filter', message: `spec.filter ${formatExpressionError(f.error)}` });
  }
  if (spec.transform !== undefined) {
    const t = compileTransform(spec.transform.jsonata);
    if (!t.ok) problems.push({ code: 'invalid_transform', message: `spec.transform.jsonata ${formatExpressionError(t.error)}` });
  }
  const key = spec.ordering?.key === undefined ? undefined : orderingKeyProblem(spec.ordering.key);
  if (key !== undefined) problems.push({ code: 'invalid_ordering_key', message: key });
  return problems;
}

/** Throws the first problem as a permanent error: Ready=False InvalidFilter / InvalidTransform / InvalidOrderingKey, the row left as it was. */
export function assertEndpointExpressions(spec: EndpointExpressionSpec): void {
  const [problem] = expressionProblems(spec);
  if (problem) throw permanent(problem.code, problem.message);
}
