import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { isAppError, type AppError } from '../domain/errors.js';
import type { Logger } from '../observability/logger.js';
import { AuthRefused, renderChallenge } from './challenge.js';

/** RFC 9457 problem details. `code` is our stable machine-readable reason. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  code: string;
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

export function problem(status: number, code: string, detail?: string): Problem {
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
 * The HTTP boundary of the error taxonomy: an AppError's code decides its status where the kind
 * alone does not (permanent 400, transient 503, internal 500 otherwise). The one table; a refusal
 * of credentials (AuthRefused) adds its challenge.
 */
const STATUS_OF_CODE: Record<string, number> = {
  unauthorized: 401,
  invalid_token: 401,
  insufficient_scope: 403,
  not_found: 404,
  not_replayable: 409,
  // retention dropped the event's payload: nothing left to send (RETENTION_PAYLOAD_MAX_AGE)
  payload_dropped: 409,
  payload_too_large: 413,
};

export function httpStatusOf(err: AppError): number {
  return STATUS_OF_CODE[err.code] ?? (err.kind === 'permanent' ? 400 : err.kind === 'transient' ? 503 : 500);
}

// fastify's own errors that are the caller's fault, mapped to our codes
const FASTIFY_CODES: Record<string, { status: number; code: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'unsupported_media_type' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'invalid_body' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'invalid_content_length' },
  FST_ERR_VALIDATION: { status: 400, code: 'invalid_request' },
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
      if (err.retryAfterSeconds !== undefined && status === 503) headers['retry-after'] = String(err.retryAfterSeconds);
      if (err instanceof AuthRefused) {
        headers['www-authenticate'] = renderChallenge(err.challenge);
        if (err.closeConnection) headers.connection = 'close';
      }
      const detail = err.kind === 'internal' ? undefined : err.message;
      return sendProblem(reply, problem(status, err.code, detail), headers);
    }
    const known = err.code ? FASTIFY_CODES[err.code] : undefined;
    if (known) return sendProblem(reply, problem(known.status, known.code, err.message));
    if (err.validation) return sendProblem(reply, problem(400, 'invalid_request', err.message));
    if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      return sendProblem(reply, problem(err.statusCode, 'bad_request', err.message));
    }
    logger.error({ err, reqId: req.id }, 'unhandled error');
    return sendProblem(reply, problem(500, 'internal', 'an internal error occurred'));
  });
  app.setNotFoundHandler((req, reply) =>
    sendProblem(reply, problem(404, 'not_found', `no route for ${req.method} ${req.url.split('?')[0] ?? ''}`.slice(0, 200))),
  );
}
