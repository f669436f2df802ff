// The API's edge (docs/architecture.md "Layers": api/failure, api/errors): a service fails
// with a Failure that carries no HTTP, and toApiError gives it the catalog's status and the
// same body and Retry-After an ApiError of that code, message and details would have had.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, ERROR_CATALOG, type ErrorCode } from '../../src/api/errors.js';
import { Failure } from '../../src/api/failure.js';
import { toApiError } from '../../src/api/failure-edge.js';

test('every code: a Failure answers what an ApiError of the same code, message and details answers', () => {
  for (const code of Object.keys(ERROR_CATALOG) as ErrorCode[]) {
    const details = { holder: { session_id: 's', owner: 'o', fencing_token: 7 } };
    const f = new Failure(code, `the ${code} message`, { details });
    assert.ok(!('status' in f), 'a Failure has no HTTP status');
    const edge = toApiError(f);
    const direct = new ApiError(code, `the ${code} message`, { details });
    assert.equal(edge.status, ERROR_CATALOG[code].status, code);
    assert.equal(edge.status, direct.status, code);
    assert.deepEqual(edge.toBody(), direct.toBody(), code);
    assert.equal(edge.retryAfterS, direct.retryAfterS, `${code}: Retry-After`);
  }
});

test('Retry-After: 429 and 503 default to 1 s; an asked value is rounded up as an ApiError rounds it', () => {
  assert.equal(toApiError(new Failure('unavailable', 'x')).retryAfterS, 1);
  assert.equal(toApiError(new Failure('too_many_requests', 'x', { retryAfterS: 1 })).retryAfterS, 1);
  assert.equal(toApiError(new Failure('unavailable', 'x', { retryAfterS: 2.2 })).retryAfterS, 3);
  assert.equal(toApiError(new Failure('lock_held', 'x')).retryAfterS, undefined);
});

test('an ApiError is a Failure and passes the edge unchanged', () => {
  const e = new ApiError('not_found', 'gone');
  assert.ok(e instanceof Failure);
  assert.equal(toApiError(e), e);
});
