// What a service of src/server answers the API (docs/architecture.md "Services answer a
// Result"): the value, or the Failure it refuses with (failure.ts: a catalog code without
// HTTP). A refusal is a value, not a rejection: the routes map it to HTTP in one place
// (failure-edge.ts answerOf), as fastify's error catalog does at its edge. A bug or a
// storage failure still throws, and the error handler answers it 500.
import { isFailure, type Failure } from './failure.js';

export type Result<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: Failure };
/** a refusal: the Result of any type that carries no value */
export type Refusal = { readonly ok: false; readonly failure: Failure };

export function ok<T>(value: T): Result<T> {
  return { ok: true, value };
}

export function refused(failure: Failure): Refusal {
  return { ok: false, failure };
}

/** r's value mapped by f; a refusal as it is */
export function mapOk<T, U>(r: Result<T>, f: (value: T) => U): Result<U> {
  return r.ok ? ok(f(r.value)) : r;
}

/**
 * fn's result, or the Failure a room below the services rejected with (the leader log's
 * "not the leader" or "outcome unknown", a lease that could not be renewed) as a refusal.
 * Anything that is not a Failure is a bug, and still throws.
 */
export async function settled<T>(fn: () => Promise<Result<T>>): Promise<Result<T>> {
  try {
    return await fn();
  } catch (err) {
    if (isFailure(err)) return refused(err);
    throw err;
  }
}
