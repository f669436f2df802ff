// The history format, Jepsen style: every operation is an `invoke` event followed by one
// completion (`ok`, `fail` or `info` = outcome unknown), stamped with one monotonic clock
// shared by every process of the run (CLOCK_MONOTONIC via process.hrtime, relative to the
// run's start). A history file is JSON lines of HistoryEvent; pairOps() turns it into Ops.

export type EventType = 'invoke' | 'ok' | 'fail' | 'info';

/** what a client did: sessions, locks, reads, and the fenced resource */
export type Fn =
  | 'open' // open a session
  | 'close' // DELETE the session
  | 'keepalive'
  | 'acquire'
  | 'release'
  | 'renew'
  | 'read' // linearizable GET /v1/locks/{name}
  | 'check' // GET /v1/locks/{name}/check
  | 'res-read' // read the fenced register
  | 'res-write' // write the fenced register
  | 'res-begin' // start using the access-logged resource (shared locks, semaphores)
  | 'res-end' // stop using it
  | 'sem-acquire' // POST /v1/semaphores/{name}/acquire (the semaphore's name in `lock`)
  | 'sem-release'
  | 'sem-read' // linearizable GET /v1/semaphores/{name}
  | 'sem-limit' // PUT /v1/semaphores/{name}/limit: resize (the new limit in `limit`)
  | 'campaign' // POST /v1/elections/{name}/campaign (the election's name in `lock`)
  | 'proclaim' // POST /v1/elections/{name}/proclaim: the leader checks it still leads
  | 'resign'
  | 'el-read' // linearizable GET /v1/elections/{name}: the leader as holder / holder_token
  | 'revoke' // the nemesis: POST /v1/locks/{name}/revoke (admin)
  | 'acquire-all' // POST /v1/locks/acquire-all (the names in `names`, the grants in `set`)
  | 'release-all' // POST /v1/locks/release-all (what it released in `released`)
  | 'bank-read' // the bank: read accounts with their tokens (the transfer workload)
  | 'transfer'; // the bank: move `amount` from `from` to `to`, fenced by both tokens

/** One flat value shape for every Fn (JSON-friendly; fields used depend on f and type). */
export interface OpValue {
  lock?: string;
  session?: string;
  token?: number;
  ttl_ms?: number;
  wait_ms?: number;
  /** acquire: the caller gave up after this long (shorter than wait_ms) */
  give_up_ms?: number;
  /** error code of a definite failure, or why an outcome is unknown */
  code?: string;
  /** lock_held / read answers: who holds it */
  held?: boolean;
  holder?: string;
  holder_token?: number;
  /** read of a lock: how many requests wait in its queue (checker 14's queue count) */
  waiters?: number;
  current?: boolean;
  /** res-read result / res-write payload */
  value?: number;
  /** res-write: the value the client read before writing (lost-update detection) */
  read?: number;
  released?: string[];
  /** acquire (the shared-lock workload) and renew: the mode of the grant asked for / held */
  mode?: 'exclusive' | 'shared';
  /** sem-acquire: permits asked for and the semaphore's limit; sem-read: the limit in force */
  permits?: number;
  limit?: number;
  /** sem-read: permits in use and the holders */
  in_use?: number;
  holders?: { session: string; token: number; permits: number }[];
  /** read of a lock: every holder with its mode (shared locks have several) */
  grants?: { session: string; token: number; mode: 'exclusive' | 'shared' }[];
  /** revoke: what it revokes (absent: a lock, an election being the lock of its name) */
  target?: 'lock' | 'semaphore';
  /** campaign, acquire, sem-acquire: the grant is freed this long after it was made (docs/contract.md §4) */
  max_hold_ms?: number;
  /** campaign / proclaim: the leader's value; el-read: the value read */
  text?: string;
  /** revoke: the grants taken away */
  revoked?: { session: string; token: number }[];
  /** res-write of the election workload: who wrote (the leader's session) */
  writer?: string;
  /** acquire-all / release-all: the names of the set; acquire-all ok: each name's grant */
  names?: string[];
  set?: { name: string; token: number }[];
  /** the transfer workload: its id, accounts, amount, the tokens and balances read */
  transfer_id?: string;
  from?: string;
  to?: string;
  amount?: number;
  tokens?: Record<string, number>;
  balances?: Record<string, number>;
  /** this request reuses the Idempotency-Key of an earlier, different request (a job id
   *  sent again with another body): the contract answers 422 idempotency_key_reused */
  reused_key?: string;
  /** an operation with wait_ms: when its last HTTP attempt was sent (its wait may run from there) */
  last_try?: number;
  /** how many HTTP attempts the logical operation took (retries with one Idempotency-Key) */
  attempts?: number;
  /** the node that gave the final answer */
  node?: string;
}

/** the operations that can make a grant: a lock, a set of locks, permits, a leadership */
export const ACQUIRES: ReadonlySet<string> = new Set(['acquire', 'campaign', 'sem-acquire', 'acquire-all']);

export interface HistoryEvent {
  /** the client process (Jepsen's :process) */
  process: string;
  /** unique per operation; an invoke and its completion share it */
  id: string;
  type: EventType;
  f: Fn;
  value: OpValue;
  /** ms since the run's start, monotonic */
  t: number;
}

/** An invoke paired with its completion. `complete` is Infinity for info ops: their effect
 *  may land at any later time, or never (Jepsen's treatment of indeterminate ops). */
export interface Op {
  process: string;
  id: string;
  f: Fn;
  type: 'ok' | 'fail' | 'info';
  /** the invoke's value */
  input: OpValue;
  /** the completion's value */
  output: OpValue;
  invoke: number;
  /** when the completion was recorded (finite even for info) */
  completedAt: number;
  /** Infinity for info */
  complete: number;
}

/** Pair invokes with completions. An invoke without a completion (a client killed mid-op,
 *  or the run ended) becomes info. A completion without an invoke is a broken history. */
export function pairOps(events: readonly HistoryEvent[], endT = Infinity): Op[] {
  const open = new Map<string, HistoryEvent>();
  const ops: Op[] = [];
  for (const e of events) {
    if (e.type === 'invoke') {
      if (open.has(e.id)) throw new Error(`history: operation ${e.id} invoked twice`);
      open.set(e.id, e);
      continue;
    }
    const inv = open.get(e.id);
    if (!inv) throw new Error(`history: completion of ${e.id} without an invoke`);
    if (inv.f !== e.f || inv.process !== e.process) throw new Error(`history: completion of ${e.id} does not match its invoke`);
    if (e.t < inv.t) throw new Error(`history: ${e.id} completes (t=${e.t}) before it was invoked (t=${inv.t})`);
    open.delete(e.id);
    ops.push({ process: e.process, id: e.id, f: e.f, type: e.type, input: inv.value, output: e.value, invoke: inv.t, completedAt: e.t, complete: e.type === 'info' ? Infinity : e.t });
  }
  for (const inv of open.values()) {
    ops.push({ process: inv.process, id: inv.id, f: inv.f, type: 'info', input: inv.value, output: { code: 'no-completion' }, invoke: inv.t, completedAt: Math.max(inv.t, Math.min(endT, 1e15)), complete: Infinity });
  }
  ops.sort((a, b) => a.invoke - b.invoke || a.id.localeCompare(b.id));
  return ops;
}

/** Parse JSONL text into events (blank lines ignored; a bad line throws naming its number). */
export function parseHistory(text: string): HistoryEvent[] {
  const out: HistoryEvent[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line) continue;
    try {
      out.push(JSON.parse(line) as HistoryEvent);
    } catch (err) {
      throw new Error(`history line ${i + 1}: ${(err as Error).message}`);
    }
  }
  return out;
}

/** One line for reports: `c3:17 acquire {lock:l1,session:ab12…} → ok {token:41} [1203.4, 1250.1]` */
export function describeOp(op: Op): string {
  const short = (v: OpValue): string =>
    JSON.stringify(v, (k, x) => (typeof x === 'string' && (k === 'session' || k === 'holder') ? x.slice(0, 8) : x));
  const end = Number.isFinite(op.complete) ? op.complete.toFixed(1) : '∞';
  return `${op.id} ${op.f} ${short(op.input)} → ${op.type} ${short(op.output)} [${op.invoke.toFixed(1)}, ${end}]`;
}
