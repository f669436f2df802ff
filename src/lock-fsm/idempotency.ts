// The Idempotency-Key table (api.md §3 "Idempotency"): key → the first result, so that a
// client retrying after a 504 (outcome unknown) gets the first answer and nothing is done
// twice. It lives in replicated state (and in snapshots) so it survives leader changes
// and restarts.
//
// Each key is bound to the request that first used it (docs/lock-fsm.md "Idempotency"):
// the command's kind and name, the principal that sent it and the digest of its canonical
// body. Only a request that matches all of them is a retry; the same key with anything
// else is refused (idempotency_key_reused) and changes nothing: keys are reused on purpose
// (a job id) and by accident, and answering another request's stored result would tell a
// client it holds a lock that someone else holds.
//
// Ageing uses log time only: each envelope carries the proposing leader's clock (atMs).
// `nowMs` is the high-water mark of those values, so a new leader whose clock lags cannot
// make old keys young again, and every replica prunes at exactly the same entries.
// Keys are recorded at `nowMs`, so the insertion queue is also sorted by time, and both
// pruning by age and eviction by size pop from its front: O(1) amortized per command.
//
// A wait is settled by the wait, not by one key (docs/lock-fsm.md "Idempotency"): every
// key whose stored answer is the 'queued' of a wait — the request that began it, and each
// request of the same session that joined it — answers what that wait came to. `waiting`
// indexes those keys by wait; it is derived from the stored answers alone (rebuilt by
// load), so a replica that restored a snapshot settles exactly the keys one that applied
// the log does.

import type { Command, CommandKind, Envelope } from './commands.js';
import type { ApplyResult, KeyReuse } from './results.js';

/** The request a key was first used for. kind and target come from the command itself;
 *  principal and digest from Envelope.keyBinding, null when the entry had none (written by
 *  a version before bindings: that part is unknown and not compared). */
export interface StoredBinding {
  kind: CommandKind;
  /** the command's name; a session close's session id; '' for a session open */
  target: string;
  principal: string | null;
  digest: string | null;
}

/** A key's record: its first answer and, in place (one object per key: the table may hold
 *  500,000 of them), the StoredBinding it is bound to. kind null: the key was restored from
 *  a snapshot of a version before bindings (format ≤ 3), only its result is known. */
interface Stored {
  atMs: number;
  result: ApplyResult;
  kind: CommandKind | null;
  target: string;
  principal: string | null;
  digest: string | null;
}

export interface IdempotencyEntry {
  key: string;
  atMs: number;
  result: ApplyResult;
  binding: StoredBinding | null;
}

export class IdempotencyTable {
  private readonly map = new Map<string, Stored>();
  /** keys in insertion order; queue[head..] are live (or stale if evicted, see prune) */
  private queue: string[] = [];
  private head = 0;
  private now = 0;
  /** one copy of each principal (API token names: as many as the token file names), so a
   *  key does not keep its own copy of the string its entry was decoded with */
  private readonly principals = new Map<string, string>();
  /** wait id (waitIdOf) → the keys whose stored answer is that wait's 'queued' answer:
   *  exactly the stored 'queued', 'sem_queued' and 'queued_all' answers, by wait */
  private readonly waiting = new Map<string, Set<string>>();

  /** TEST ONLY (docs/jepsen-lite.md "Does it bite?"): a key answers every later request
   *  with its first answer, bound to nothing, as before keys were bound to their request */
  testReplayReusedKeys = false;
  /** TEST ONLY (docs/simulation-lock.md, the mutation table): a wait that ends without a
   *  grant leaves its key's stored answer 'queued', as before endWait */
  testKeepQueuedAnswers = false;

  constructor(readonly ttlMs: number, readonly maxKeys: number) {
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 600_000) throw new Error(`idempotencyTtlMs must be an integer >= 600000 (the contract keeps keys 10 minutes), got ${ttlMs}`);
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) throw new Error(`idempotencyMaxKeys must be a positive integer, got ${maxKeys}`);
  }

  get size(): number {
    return this.map.size;
  }

  /** the log-time high-water mark */
  get nowMs(): number {
    return this.now;
  }

  /** Moves log time forward (never back) and evicts keys older than ttlMs. */
  advance(atMs: number): void {
    if (atMs > this.now) this.now = atMs;
    const horizon = this.now - this.ttlMs;
    while (this.head < this.queue.length) {
      const st = this.map.get(this.queue[this.head] as string);
      if (st === undefined) throw new Error('IdempotencyTable: queue and map disagree');
      if (st.atMs > horizon) break;
      this.popFront();
    }
  }

  get(key: string): ApplyResult | undefined {
    return this.map.get(key)?.result;
  }

  /**
   * A keyed entry meets the table: undefined when the key is new (apply the command),
   * the stored first answer when this is a retry of the request that first used it, or
   * the refusal that changes nothing when the key was first used for another request.
   */
  check(key: string, env: Envelope): { replay: ApplyResult } | { reused: KeyReuse } | undefined {
    const st = this.map.get(key);
    if (st === undefined) return undefined;
    if (this.testReplayReusedKeys) return { replay: st.result };
    const first = bindingIn(st);
    const differs = first === null ? legacyReuse(env.cmd, st.result) : reuseOf(first, bindingOf(env));
    return differs === null ? { replay: st.result } : { reused: differs };
  }

  /** Records the first result for key, bound to the entry's request. Past maxKeys, the
   *  oldest key is dropped: the table stays bounded, at the price of an older retry being
   *  executed again. */
  put(key: string, result: ApplyResult, env: Envelope): void {
    if (this.map.has(key)) throw new Error(`IdempotencyTable: key ${JSON.stringify(key)} recorded twice`);
    if (!result.ok && result.code === 'idempotency_key_reused') throw new Error(`IdempotencyTable: a refusal of key ${JSON.stringify(key)} is not its answer`);
    while (this.map.size >= this.maxKeys) this.popFront();
    this.map.set(key, this.record(this.now, result, bindingOf(env)));
    this.queue.push(key);
    this.index(key, result);
  }

  /** A queued acquire was granted: the answer of every key still 'queued' for this wait
   *  (the session's wait for `name`) becomes the grant (same age, same place in the
   *  eviction order). A key that has aged out stays gone. `grant` is called only when the
   *  wait has keys: most grants from a queue have none, and pay one size check. */
  settle(queued: 'queued' | 'sem_queued', sessionId: string, name: string, grant: () => Extract<ApplyResult, { kind: 'acquired' | 'sem_acquired' }>): void {
    this.finish(queued, sessionId, name, () => freeze(grant()));
  }

  /**
   * A queued request's wait ended without a grant — its wait_ms ran out, it was withdrawn
   * (a release, a client that went away, a resign), or its session ended: the stored
   * 'queued' answer of every key of this wait becomes the refusal (`answer`) that the
   * waiting request was given. A later copy of a request — a retry, or a relay that sat
   * behind a paused node — then gets that answer, and never waits again (docs/lock-fsm.md
   * "Idempotency"; jepsen-lite seed 179705514: a copy delivered 3.7 s late was asked again
   * and granted a lock its client had been told it did not get). Only the stored answers
   * of this same wait are replaced: a single request's for `name` and the session.
   * `answer` is called, as it stands then, only when the wait has keys.
   */
  endWait(queued: 'queued' | 'sem_queued', sessionId: string, name: string, answer: () => ApplyResult): void {
    if (this.testKeepQueuedAnswers) return;
    this.finish(queued, sessionId, name, () => freeze(refusal(answer())));
  }

  /** A waiting lock set ended without a grant: as endWait, for the stored 'queued_all' of
   *  the same session and wait (`since`). */
  endSetWait(sessionId: string, since: number, answer: () => ApplyResult): void {
    if (this.testKeepQueuedAnswers) return;
    this.finish('queued_all', sessionId, since, () => freeze(refusal(answer())));
  }

  /** A queued lock set was granted (docs/lock-fsm.md "Lock sets"): as settle, for the
   *  stored 'queued_all' of the same session and wait (`since`). */
  settleSet(sessionId: string, since: number, grant: () => Extract<ApplyResult, { kind: 'acquired_all' }>): void {
    this.finish('queued_all', sessionId, since, () => freeze(grant()));
  }

  /** the wait (kind, session, name or since) came to `result()`: each of its keys answers
   *  it from now on (a wait ends once) */
  private finish(kind: 'queued' | 'sem_queued' | 'queued_all', sessionId: string, of: string | number, result: () => ApplyResult): void {
    if (this.waiting.size === 0) return;
    const id = waitId(kind, sessionId, of);
    const keys = this.waiting.get(id);
    if (keys === undefined) return;
    this.waiting.delete(id);
    const r = result();
    for (const key of keys) {
      const st = this.map.get(key);
      if (st === undefined || waitIdOf(st.result) !== id) throw new Error(`IdempotencyTable: key ${JSON.stringify(key)} is indexed under a wait it does not answer`);
      st.result = r;
    }
  }

  /** a key recorded with `result`: indexed by its wait when that is a 'queued' answer */
  private index(key: string, result: ApplyResult): void {
    const id = waitIdOf(result);
    if (id === undefined) return;
    const keys = this.waiting.get(id);
    if (keys === undefined) this.waiting.set(id, new Set([key]));
    else keys.add(key);
  }

  /** a key leaves the table: and its wait's index */
  private unindex(key: string, result: ApplyResult): void {
    const id = waitIdOf(result);
    if (id === undefined) return;
    const keys = this.waiting.get(id);
    if (keys === undefined || !keys.delete(key)) throw new Error(`IdempotencyTable: key ${JSON.stringify(key)} answers a wait but is not indexed under it`);
    if (keys.size === 0) this.waiting.delete(id);
  }

  /** The service's withdrawal released a grant that won the race against the client's own
   *  release (Command release.settles): that release's stored `not_holder` becomes the
   *  `released` the client was answered. Any other stored answer stays. */
  settleRelease(key: string, name: string, kind: 'released' | 'sem_released' = 'released'): void {
    const st = this.map.get(key);
    if (st === undefined) return;
    const r = st.result;
    if (!(!r.ok && r.code === 'not_holder')) return;
    st.result = freeze({ ok: true, kind, name });
  }

  private record(atMs: number, result: ApplyResult, b: StoredBinding | null): Stored {
    if (b === null) return { atMs, result: freeze(result), kind: null, target: '', principal: null, digest: null };
    return { atMs, result: freeze(result), kind: b.kind, target: b.target, principal: b.principal === null ? null : this.intern(b.principal), digest: b.digest };
  }

  private intern(principal: string): string {
    const known = this.principals.get(principal);
    if (known !== undefined) return known;
    this.principals.set(principal, principal);
    return principal;
  }

  private popFront(): void {
    const key = this.queue[this.head] as string;
    this.unindex(key, (this.map.get(key) as Stored).result);
    this.map.delete(key);
    this.head++;
    // Compact once the dead prefix dominates: each key is copied O(1) times amortized.
    if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  /** entries oldest first (the eviction order, which is part of the state) */
  *entries(): Generator<IdempotencyEntry> {
    for (let i = this.head; i < this.queue.length; i++) {
      const key = this.queue[i] as string;
      const st = this.map.get(key) as Stored;
      yield { key, atMs: st.atMs, result: st.result, binding: bindingIn(st) };
    }
  }

  /** Rebuilds from a snapshot; the caller has validated entries (sorted by atMs, unique keys). */
  load(nowMs: number, entries: readonly IdempotencyEntry[]): void {
    this.map.clear();
    this.waiting.clear();
    this.queue = [];
    this.head = 0;
    this.now = nowMs;
    for (const e of entries) {
      this.map.set(e.key, this.record(e.atMs, e.result, e.binding));
      this.queue.push(e.key);
      this.index(e.key, e.result);
    }
  }
}

/** the wait a stored 'queued' answer is the answer of: its kind, session and name (a lock
 *  set's: its `since`); undefined for any other answer. Locks and elections share names. */
function waitIdOf(r: ApplyResult): string | undefined {
  if (!r.ok) return undefined;
  if (r.kind === 'queued' || r.kind === 'sem_queued') return waitId(r.kind, r.sessionId, r.name);
  if (r.kind === 'queued_all') return waitId(r.kind, r.sessionId, r.since);
  return undefined;
}

function waitId(kind: 'queued' | 'sem_queued' | 'queued_all', sessionId: string, of: string | number): string {
  return `${kind}\u0000${sessionId}\u0000${of}`;
}

/** Stored results are handed to every retry: freeze them so no caller can alter history. */
function freeze(r: ApplyResult): ApplyResult {
  if (r.ok && r.kind === 'session_closed') Object.freeze(r.released);
  if (!r.ok && r.code === 'lock_held' && r.holder) Object.freeze(r.holder);
  // lock sets and deadlocks (lock-sets.ts, deadlock.ts): their lists too
  const rows = r.ok ? (r.kind === 'acquired_all' ? r.grants : r.kind === 'queued_all' ? r.names : r.kind === 'released_all' ? r.released : undefined) : r.code === 'deadlock' ? r.cycle : r.code === 'lock_held' ? r.blocked : undefined;
  if (rows !== undefined) {
    for (const x of rows) {
      if (typeof x !== 'object') continue;
      if ('holder' in x && x.holder !== undefined) Object.freeze(x.holder);
      Object.freeze(x);
    }
    Object.freeze(rows);
  }
  return Object.freeze(r);
}

/** the command's own part of a key's binding: what it acts on. A session open has none
 *  (its id is drawn by the leader per attempt); a session close names its session. */
export function targetOf(cmd: Command): string {
  if (cmd.kind === 'openSession') return '';
  if ('name' in cmd) return cmd.name;
  if ('sessionId' in cmd) return cmd.sessionId;
  return '';
}

function bindingIn(st: Stored): StoredBinding | null {
  return st.kind === null ? null : { kind: st.kind, target: st.target, principal: st.principal, digest: st.digest };
}

/** the binding an entry records for its key */
export function bindingOf(env: Envelope): StoredBinding {
  const b = env.keyBinding;
  return { kind: env.cmd.kind, target: targetOf(env.cmd), principal: b?.principal ?? null, digest: b?.digest ?? null };
}

/** The first part that differs, in the order principal, operation, name, body (so a
 *  caller that is not the key's first principal learns nothing of its request), or null
 *  for the same request. A part unknown on either side (an entry of a version before
 *  bindings) is not compared. */
export function reuseOf(first: StoredBinding, now: StoredBinding): KeyReuse | null {
  if (first.principal !== null && now.principal !== null && first.principal !== now.principal) return 'principal';
  if (first.kind !== now.kind) return 'operation';
  if (first.target !== now.target) return 'name';
  if (first.digest !== null && now.digest !== null && first.digest !== now.digest) return 'body';
  return null;
}

/** the successful results each command kind answers with (a key restored from a format ≤ 3
 *  snapshot is checked against its stored result only); absent: not checked */
const ANSWERS: Partial<Record<CommandKind, readonly Extract<ApplyResult, { ok: true }>['kind'][]>> = {
  openSession: ['session_opened'],
  closeSession: ['session_closed'],
  acquire: ['acquired', 'queued'],
  campaign: ['acquired', 'queued'],
  semAcquire: ['sem_acquired', 'sem_queued'],
  release: ['released'],
  semRelease: ['sem_released'],
  semSetLimit: ['sem_limit'],
  revoke: ['revoked'],
  proclaim: ['proclaimed'],
  resign: ['resigned'],
};

/**
 * A key restored from a snapshot of a version before bindings (format ≤ 3): only its
 * first result is known. It answers a retry when that result could be this command's —
 * a successful result of the command's kind, naming the command's lock (or session) —
 * and is refused otherwise. Refusals carry no name and are replayed as before.
 */
export function legacyReuse(cmd: Command, r: ApplyResult): KeyReuse | null {
  if (!r.ok) return null;
  const kinds = ANSWERS[cmd.kind];
  if (kinds !== undefined && !kinds.includes(r.kind)) return 'operation';
  const target = targetOf(cmd);
  if ('name' in r && r.name !== target) return 'name';
  if (r.kind === 'session_closed' && cmd.kind === 'closeSession' && r.sessionId !== target) return 'name';
  return null;
}

/** the refusal a wait ended with; a grant or a reused-key refusal here is a bug */
function refusal(answer: ApplyResult): ApplyResult {
  if (answer.ok || answer.code === 'idempotency_key_reused') throw new Error(`IdempotencyTable: a wait that ended without a grant is answered ${JSON.stringify(answer)}`);
  return answer;
}
