// The workloads a jepsen-lite client process can run (docs/jepsen-lite.md "Workloads"):
// `lock` (exclusive locks and the fenced register), `shared` (readers and writers of a
// shared lock against the access-logged resource), `semaphore` (permits of a
// semaphore with a fixed limit against the same resource) and `election` (campaigners of
// one election; the leader writes the fenced register with its fencing token). Each client process runs one;
// the names each workload uses are disjoint, so the checkers can tell them apart from
// the history alone (also on --recheck).

// the prefixes by which the history checkers tell the workloads apart live with them
import { SEM_PREFIX } from '../checkers/history/names.js';
export { SHARED_PREFIX, SEM_PREFIX, ELECTION_PREFIX, isSharedLock, isElection } from '../checkers/history/names.js';

export const WORKLOADS = ['lock', 'shared', 'semaphore', 'election', 'transfer', 'wait'] as const;
export type Workload = (typeof WORKLOADS)[number];

/** exclusive lock names: jl-0, jl-1, … (the linearizability and lease checkers' locks) */
export const LOCK_PREFIX = 'jl-';

/** the transfer workload's accounts: lock names ja-0 … ja-(ACCOUNTS−1), one fenced
 *  account each at the bank (resource-proc.ts), every one opening with OPENING_BALANCE */
export const ACCOUNT_PREFIX = 'ja-';
export const ACCOUNTS = 4;
export const OPENING_BALANCE = 100;

/** An account lock of the transfer workload (taken with acquire-all, checked per name by
 *  the linearizability and lease checkers as projected acquires: test/checkers/history/lock-sets.ts). */
export function isAccount(name: string | undefined): boolean {
  return name !== undefined && name.startsWith(ACCOUNT_PREFIX);
}

/** the wait workload's lock (client-wait.ts): long holds and waiters that do not retry */
export const WAIT_PREFIX = 'jw-';
export const WAIT_LOCKS = 1;
/** the election workload's elections (ELECTION_PREFIX0, …; client-election.ts) */
export const ELECTIONS = 1;

/** how many names the shared and semaphore workloads compete for: one shared lock, so
 *  that a handful of clients contend (readers with writers); two semaphores, jm-0 with a
 *  fixed limit and jm-1 that its clients also resize (RESIZED_SEM) */
export const SHARED_LOCKS = 1;
export const SEMAPHORES = 2;
/** the limit every semaphore starts with (jm-0 keeps it); clients ask for 1 or 2 permits */
export const SEM_LIMIT = 2;
/** the semaphore whose clients resize it between SEM_LIMIT and SEM_LIMIT + 1 */
export const RESIZED_SEM = `${SEM_PREFIX}1`;

/** a third of the acquires of every workload ask the service to end the grant by itself
 *  after 300–1500 ms (docs/contract.md §4 "Revocation and maximum hold") */
export function maxHoldOf(rng: { next(): number; int(lo: number, hi: number): number }): { max_hold_ms?: number } {
  return rng.next() < 0.33 ? { max_hold_ms: rng.int(300, 1500) } : {};
}



/** the workload of each client c1…cN: round-robin over the list, so every workload of a
 *  run gets ⌊N/k⌋ or ⌈N/k⌉ clients */
export function assignWorkloads(workloads: readonly Workload[], clients: number): Workload[] {
  return Array.from({ length: clients }, (_, i) => workloads[i % workloads.length]!);
}

/** nodes + 2 clients, and at least two per workload (one shared client or one semaphore
 *  client contends with nobody) */
export function defaultClients(nodes: number, workloads: readonly Workload[]): number {
  return Math.max(nodes + 2, 2 * workloads.length);
}

export function parseWorkloads(v: string): Workload[] | string {
  if (v === 'all') return [...WORKLOADS];
  const out: Workload[] = [];
  for (const w of v.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (!(WORKLOADS as readonly string[]).includes(w)) return `unknown workload "${w}" (known: ${WORKLOADS.join(', ')}, all)`;
    out.push(w as Workload); // a name twice weights it (round-robin)
  }
  return out.length ? out : `no workload in "${v}"`;
}
