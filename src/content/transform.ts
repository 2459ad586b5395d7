import jsonata from 'jsonata';
import type { ContentEvent } from './event-view.js';
import type { CompileResult, ExpressionError } from './filter.js';
import { Re2RegExp } from './re2.js';

/**
 * A WebhookEndpoint's `spec.transform.jsonata`: a JSONata expression over the event object the
 * filter sees (`type`, `data.amount`, `headers`, ...) whose result is the JSON body sent.
 * Compiled when the resource is reconciled, applied at each delivery attempt.
 *
 * Bounds (docs/decisions.md "Transforms"): JSONata's own guardrails stop a loop or a recursion
 * between two steps of evaluation (`timeout`, `stack`, `sequence`); what one step could do at
 * once is bounded here: every step's value is checked against the size limit as it is made (a
 * string that doubles each step stops at the limit, before V8 is asked for a string it can not
 * build: that aborts the process), `$pad` is capped, and regular expressions run on RE2.
 */

export const TRANSFORM_MAX_LENGTH = 16 * 1024;
/**
 * Evaluation steps per application: the deterministic bound (the same input stops at the same
 * step, so a FAILED delivery is not retried). The time limit is the backstop for steps that each
 * take long; it is wall-clock time, which a busy or starved worker reaches too, so running past
 * it is retryable (the attempt is spent, and retried with backoff) rather than final.
 */
export const TRANSFORM_MAX_STEPS = 10_000;
export const TRANSFORM_TIME_LIMIT_MS = 250;
/** The body a transform makes, as JSON; also the cap on any string made along the way. */
export const TRANSFORM_MAX_BYTES = 1024 * 1024;
/** Items in one sequence (JSONata's own check, before the items are made). */
const MAX_SEQUENCE = 100_000;
/** Nested evaluation depth: a recursion that is not a tail call stops here. */
const MAX_STACK = 500;

/** `retryable`: it ran past TRANSFORM_TIME_LIMIT_MS (see above); every other error is final. */
export type TransformOutcome = { body: Buffer } | { error: string; retryable?: true };

export interface CompiledTransform {
  readonly source: string;
  apply(event: ContentEvent): Promise<TransformOutcome>;
}

interface JsonataError {
  code?: string;
  position?: number;
  message?: string;
  token?: string;
}

class TooLarge extends Error {}

const positionOf = (text: string, offset: number): { line: number; column: number } => {
  const lines = text.slice(0, Math.max(0, offset)).split('\n');
  return { line: lines.length, column: (lines.at(-1)?.length ?? 0) + 1 };
};

function describe(err: unknown): string {
  if (err instanceof Error && !('code' in err)) return err.message;
  const e = err as JsonataError;
  const message = e.message ?? String(err);
  return e.code ? `${e.code}: ${message}` : message;
}

/** Steps taken per evaluation, by the evaluation's root frame (one per evaluate() call). */
const stepsTaken = new WeakMap<object, number>();

function countStep(env: unknown): void {
  const root = (env as { base?: object } | null)?.base;
  if (root === undefined) return;
  const steps = (stepsTaken.get(root) ?? 0) + 1;
  if (steps > TRANSFORM_MAX_STEPS) throw new TooLarge(`over ${TRANSFORM_MAX_STEPS} evaluation steps`);
  stepsTaken.set(root, steps);
}

/** Checks a step's value as it is made: a long string or array stops here. */
function checkSize(value: unknown): void {
  if (typeof value === 'string' && value.length > TRANSFORM_MAX_BYTES) {
    throw new TooLarge(`a value over ${TRANSFORM_MAX_BYTES} bytes was made (a string of ${value.length} characters)`);
  }
  if (Array.isArray(value) && value.length > MAX_SEQUENCE) {
    throw new TooLarge(`a value over ${MAX_SEQUENCE} items was made`);
  }
}

/** `$pad` builds its result in one step, whatever its width: capped like every other string. */
function boundedPad(str: string, width: number, char?: string): string | undefined {
  if (Math.abs(width) > TRANSFORM_MAX_BYTES) throw new TooLarge(`$pad to ${width} characters: over ${TRANSFORM_MAX_BYTES}`);
  const fill = char === undefined || char === '' ? ' ' : char;
  const missing = Math.abs(width) - [...str].length;
  if (missing <= 0) return str;
  const padding = fill.repeat(Math.ceil(missing / [...fill].length)).slice(0, missing);
  return width > 0 ? str + padding : padding + str;
}

/** JSONata's error code for an evaluation past its `timeout` option. */
const TIME_LIMIT_CODE = 'D1012';

const EXIT = Symbol.for('jsonata.__evaluate_exit') as unknown as string;

export function compileTransform(text: string): CompileResult<CompiledTransform> {
  if (text.length > TRANSFORM_MAX_LENGTH) {
    return {
      ok: false,
      error: {
        line: 1,
        column: TRANSFORM_MAX_LENGTH + 1,
        message: `transform too long: ${text.length} characters, at most ${TRANSFORM_MAX_LENGTH}`,
      },
    };
  }
  if (text.trim() === '') return { ok: false, error: { line: 1, column: 1, message: 'empty transform' } };
  let expr: jsonata.Expression;
  try {
    expr = jsonata(text, {
      timeout: TRANSFORM_TIME_LIMIT_MS,
      stack: MAX_STACK,
      sequence: MAX_SEQUENCE,
      RegexEngine: Re2RegExp as unknown as RegExpConstructor,
    });
  } catch (err) {
    const e = err as JsonataError;
    const error: ExpressionError = { message: describe(err), ...positionOf(text, (e.position ?? 1) - 1) };
    return { ok: false, error };
  }
  // a regex literal RE2 does not take is an error now, not at the first delivery
  const regexProblem = firstRegexProblem(expr.ast(), text);
  if (regexProblem) return { ok: false, error: regexProblem };
  expr.registerFunction('pad', boundedPad, '<s-ns?:s>');
  expr.assign(EXIT, (_e: unknown, _input: unknown, env: unknown, result: unknown) => {
    countStep(env);
    checkSize(result);
  });
  return {
    ok: true,
    value: {
      source: text,
      async apply(event: ContentEvent): Promise<TransformOutcome> {
        let result: unknown;
        try {
          result = await expr.evaluate(transformInput(event));
        } catch (err) {
          if ((err as JsonataError).code === TIME_LIMIT_CODE) {
            return {
              error: `transform ran past its time limit of ${TRANSFORM_TIME_LIMIT_MS} ms (a busy worker, or a slow expression)`,
              retryable: true,
            };
          }
          return { error: `transform failed: ${describe(err)}` };
        }
        if (result === undefined)
          return { error: 'transform failed: the expression gave nothing (no field matched): there is no body to send' };
        let json: string | undefined;
        try {
          json = JSON.stringify(result);
        } catch (err) {
          return { error: `transform failed: the result is not JSON: ${describe(err)}` };
        }
        if (json === undefined) return { error: 'transform failed: the result is not JSON (a function)' };
        const body = Buffer.from(json, 'utf8');
        if (body.length > TRANSFORM_MAX_BYTES)
          return { error: `transform failed: the body would be ${body.length} bytes, over ${TRANSFORM_MAX_BYTES}` };
        return { body };
      },
    },
  };
}

interface AstNode {
  type?: string;
  value?: unknown;
  position?: number;
  [k: string]: unknown;
}

function firstRegexProblem(node: unknown, text: string): ExpressionError | undefined {
  if (node === null || typeof node !== 'object') return undefined;
  const n = node as AstNode;
  if (n.type === 'regex' && n.value instanceof RegExp) {
    try {
      new Re2RegExp(n.value);
    } catch (err) {
      return { message: `invalid RE2 pattern: ${(err as Error).message}`, ...positionOf(text, (n.position ?? 1) - 1) };
    }
  }
  for (const v of Object.values(n)) {
    const p = Array.isArray(v) ? v.map((x) => firstRegexProblem(x, text)).find((x) => x !== undefined) : firstRegexProblem(v, text);
    if (p) return p;
  }
  return undefined;
}

/** The event as a JSONata input document: receivedAt as its RFC 3339 text. */
export const transformInput = (e: ContentEvent) => ({
  source: e.source,
  type: e.type,
  id: e.id,
  receivedAt: e.receivedAt.toISOString(),
  headers: e.headers,
  data: e.data,
});
