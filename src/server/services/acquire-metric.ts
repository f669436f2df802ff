// raftlock_lock_acquire_total{result} (docs/api.md "Metrics"): every acquire, of one lock or
// of a set, is counted once by how it was answered, and once more as `queued` when it
// waited. Counted here, around the whole acquire, so that no way out of it goes uncounted
// (the lock-set service used to count at each exit, and missed some).
import type { ServiceDeps } from '../leader/service-deps.js';
import { settled, type Result } from '../../api/service-result.js';

/** the `result` label of an acquire's answer */
function outcomeOf(r: Result<unknown>): 'acquired' | 'timeout' | 'lock_held' | 'session_not_found' | 'error' {
  if (r.ok) return 'acquired';
  const code = r.failure.code;
  return code === 'timeout' || code === 'lock_held' || code === 'session_not_found' ? code : 'error';
}

/** Runs one acquire (its refusals settled into a Result) and counts it; `acquire` calls
 *  `onQueued` when the request waits in the queue. */
export async function countedAcquire<T>(metrics: Pick<ServiceDeps['metrics'], 'acquireOutcome'>, acquire: (onQueued: () => void) => Promise<Result<T>>): Promise<Result<T>> {
  let r: Result<T>;
  try {
    r = await settled(() => acquire(() => metrics.acquireOutcome('queued')));
  } catch (err) {
    metrics.acquireOutcome('error'); // a bug: the error handler answers 500
    throw err;
  }
  metrics.acquireOutcome(outcomeOf(r));
  return r;
}
