import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { ERROR_CODES, type ErrorCode } from '../domain/error-codes.js';
import { isAppError, type AppError } from '../domain/errors.js';
import type { Logger } from '../observability/logger.js';
import { AuthRefused, RefusalsLimited, renderChallenge } from './challenge.js';

/** RFC 9457 problem details. `code` is our stable machine-readable reason. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  code: ErrorCode;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  417: 'Expectation Failed',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** A problem for a registered code, with the code's status unless an answer must keep another (a 4xx of fastify's). */
export function problem(code: ErrorCode, detail?: string, status: number = ERROR_CODES[code].status): Problem {
  return {
    type: `https://webhook-fanout.io/problems/${code}`,
    title: TITLES[status] ?? 'Error',
    status,
    code,
    ...(detail === undefined ? {} : { detail }),
  };
}

/** A whole HTTP/1.1 response carrying a problem, for answers written to the socket below fastify. */
export function rawProblemResponse(p: Problem): string {
  const body = JSON.stringify(p);
  return (
    `HTTP/1.1 ${p.status} ${p.title}\r\nContent-Type: application/problem+json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

export function sendProblem(reply: FastifyReply, p: Problem, headers: Record<string, string> = {}): FastifyReply {
  return reply.code(p.status).headers(headers).type('application/problem+json').send(p);
}

/**
 * The HTTP boundary of the error taxonomy: the status is the code's (error-codes.ts); a refusal of
 * credentials (AuthRefused) adds its challenge.
 */
export function httpStatusOf(err: AppError): number {
  return ERROR_CODES[err.code].status;
}

// fastify's own errors that are the caller's fault, mapped to our codes
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_body',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_content_length',
  FST_ERR_VALIDATION: 'invalid_request',
};

/**
 * One error handler per HTTP app: AppErrors map by kind; fastify's client errors keep their
 * status; anything else is a 500 whose body says nothing of the internals.
 */
export function installProblemHandlers(app: FastifyInstance, logger: Logger): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (isAppError(err)) {
      if (err.kind === 'internal') logger.error({ err, reqId: req.id }, 'internal error');
      else if (err.kind === 'transient') logger.warn({ code: err.code, reqId: req.id, cause: String(err.cause ?? '') }, err.message);
      const status = httpStatusOf(err);
      const headers: Record<string, string> = {};
      if (err.retryAfterSeconds !== undefined && (status === 503 || status === 429)) headers['retry-after'] = String(err.retryAfterSeconds);
      if (err instanceof AuthRefused) {
        headers['www-authenticate'] = renderChallenge(err.challenge);
        if (err.closeConnection) headers.connection = 'close';
      }
      if (err instanceof RefusalsLimited) headers.connection = 'close';
      const detail = err.kind === 'internal' ? undefined : err.message;
      return sendProblem(reply, problem(err.code, detail), headers);
    }
    const known = err.code ? FASTIFY_CODES[err.code] : undefined;
    if (known) return sendProblem(reply, problem(known, err.message));
    if (err.validation) return sendProblem(reply, problem('invalid_request', err.message));
    if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      return sendProblem(reply, problem('bad_request', err.message, err.statusCode));
    }
    logger.error({ err, reqId: req.id }, 'unhandled error');
    return sendProblem(reply, problem('internal', 'an internal error occurred'));
  });
  app.setNotFoundHandler((req, reply) =>
    sendProblem(reply, problem('not_found', `no route for ${req.method} ${req.url.split('?')[0] ?? ''}`.slice(0, 200))),
  );
}
