// Which failed acquires may still have taken effect (docs/client.md "An acquire that fails
// never leaves a grant behind"). Only a definite "not applied" needs no cleanup: a 4xx
// answer (lock_held: the wait ran out and the server withdrew it; session_not_found; bad
// input; no permission), or retries that ended with only 503/429 answers and connections
// that never opened (a 503 means the command never entered the log: docs/api.md
// "Errors"). Everything else — an abort, OutcomeUnknownError, another 5xx, a success
// answer that could not be decoded, any other throw — may hide a grant.
import { OutcomeUnknownError, RaftlockError, UnavailableError } from './errors.js';

export function definitelyNotApplied(err: unknown): boolean {
  if (err instanceof OutcomeUnknownError) return false;
  if (err instanceof UnavailableError) return true;
  return err instanceof RaftlockError && err.status !== undefined && err.status >= 400 && err.status < 500;
}

/**
 * Whether a wait the server refused (lock_held, semaphore_full) ran its `waitMs` out. The
 * server ends a wait no earlier than wait_ms after the request arrived, which is after it
 * was sent, so a refusal that comes sooner was not a timeout: the request could not wait
 * at all (a share is never upgraded, a wait of the session it may not join) or its wait
 * was withdrawn. Asking again would get the same answer at once, so only a wait that ran
 * out is asked again (a wait longer than one request's). The slack covers clock ticks.
 */
export function waitRanOut(elapsedMs: number, waitMs: number): boolean {
  return elapsedMs >= waitMs - Math.max(5, waitMs / 100);
}
