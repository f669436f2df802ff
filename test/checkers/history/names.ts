// The name prefixes by which the history checkers tell the workloads apart from the
// history alone (also on --recheck): each jepsen-lite workload (test/jepsen-lite/
// workloads.ts) uses names of its own prefix only.

/** the shared-lock workload's lock names: js-0, … */
export const SHARED_PREFIX = 'js-';
/** the semaphore workload's semaphore names: jm-0, … */
export const SEM_PREFIX = 'jm-';
/** the election workload's election names: je-0, … (election.ts) */
export const ELECTION_PREFIX = 'je-';

/** A lock of the shared-lock workload: checked by checkSharedLocks (and, as every name, by
 *  the linearizability checker), not by the exclusive lease checker. */
export function isSharedLock(name: string | undefined): boolean {
  return name !== undefined && name.startsWith(SHARED_PREFIX);
}

/** An election of the election workload: checked by checkElections. */
export function isElection(name: string | undefined): boolean {
  return name !== undefined && name.startsWith(ELECTION_PREFIX);
}
