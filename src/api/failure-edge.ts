// The API's edge for failures (docs/architecture.md "Services answer a Result"): the one
// place where a service's refusal, or anything a route throws, gets its HTTP status, body
// and Retry-After (errors.ts ApiError.of, after fastify's error catalog). The routes hand
// every service answer to answerOf (routes/context.ts onLeader); the server's error
// handler hands everything thrown to toApiError.
import type { FastifyError, FastifyRequest } from 'fastify';
import { ApiError, ERROR_CATALOG } from './errors.js';
import { isFailure } from './failure.js';
import type { Result } from './service-result.js';
import { BODY_LIMIT_BYTES } from './validate.js';

/** A service's answer as the route answers it: the value, or its refusal as the ApiError
 *  the error handler renders (thrown, so it passes the same handler, leader hint and
 *  Retry-After as every other error). */
export function answerOf<T>(r: Result<T>): T {
  if (r.ok) return r.value;
  throw ApiError.of(r.failure);
}

const STATUS_TO_CODE = new Map<number, keyof typeof ERROR_CATALOG>([
  [400, 'invalid_request'], [401, 'unauthenticated'], [403, 'permission_denied'], [404, 'not_found'],
  [410, 'compacted'], [413, 'payload_too_large'], [415, 'unsupported_media_type'], [429, 'too_many_requests'], [503, 'unavailable'], [504, 'timeout'],
]);

/** Anything thrown → an ApiError (the one edge where a Failure gets its HTTP status).
 *  fastify's own errors keep their meaning; the rest is 500. */
export function toApiError(err: unknown, req?: FastifyRequest): ApiError {
  // a service's refusal (failure.ts): its code, message and details, with the catalog's status
  if (isFailure(err)) return ApiError.of(err);
  const fe = err as Partial<FastifyError>;
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', `content-type must be application/json, got ${JSON.stringify(req?.headers['content-type'] ?? '')}`, { cause: err });
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', `body is over ${BODY_LIMIT_BYTES} bytes (64 KiB)`, { cause: err });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('invalid_request', 'body: length does not match content-length', { cause: err });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('invalid_request', 'body: invalid JSON', { cause: err });
  }
  const status = typeof fe.statusCode === 'number' ? fe.statusCode : 500;
  const code = STATUS_TO_CODE.get(status);
  if (code && status < 500) return new ApiError(code, `${ERROR_CATALOG[code].message}: ${String(fe.message).slice(0, 200)}`, { cause: err });
  req?.log.error({ err }, 'unexpected error in a request');
  return new ApiError('internal', 'internal error; see the server log', { cause: err });
}
