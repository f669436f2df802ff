// Lock FSM benchmark: applies per second at scale (1M sessions, 1M held locks), memory per
// idle session and per held lock, snapshot size and export/encode/decode/restore times; then
// lock sets and deadlock detection among 100,000 sessions with long queues (docs/lock-fsm.md
// "Deadlock detection": the cost of the wait-for walk, in edges followed and in time).
//
//   npm run bench:fsm                 # 1,000,000 sessions and locks, 100,000 for deadlocks
//   npm run bench:fsm -- --n 200000   # smaller
//   npm run bench:fsm -- --only-deadlock [--dl-sessions 100000] [--queue 1000]
//
// Runs with --expose-gc so heap figures are measured after a full collection.
import { Packr } from 'msgpackr';
import { LockFsm, exportState, walkNewWait, type Command, type Envelope } from '../src/lock-fsm/index.js';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}
const N = arg('--n', 1_000_000);
/** sessions of the deadlock benchmark, and the length of its long queues */
const DL_SESSIONS = arg('--dl-sessions', 100_000);
const QUEUE = arg('--queue', 1000);
const packr = new Packr({ useRecords: false, structuredClone: false, moreTypes: false, bundleStrings: false });
const gc = (globalThis as { gc?: () => void }).gc;

function heapMB(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** session ids as the leader would draw them: 32 hex chars (128 bits) */
function sid(i: number): string {
  return (0x10000000 + i).toString(16) + '9f3c2a7be41d05c8' + (0x10000000 + i * 7).toString(16).slice(-8);
}
function lockName(i: number): string {
  return `jobs/tenant-${i % 1000}/job-${i.toString().padStart(9, '0')}`;
}

let index = 0;
const atMs = 1_700_000_000_000;
/** a keyed entry as a leader writes it: the key bound to its request (docs/lock-fsm.md
 *  "Idempotency"), a digest of 32 hex digits as the node computes one */
function keyed(i: number, key: string, cmd: Command): Envelope {
  return { atMs, idempotencyKey: key, keyBinding: { principal: 'ci-runner', digest: flat((0x10000000 + i).toString(16).repeat(4)) }, cmd };
}

/** a string as decoded from the log: one flat copy (concatenations and repeat() may
 *  leave a rope of parts, which would count more than a node keeps) */
function flat(x: string): string {
  return Buffer.from(x, 'utf8').toString('utf8');
}

function timed(label: string, n: number, fsm: LockFsm, cmdAt: (i: number) => Command, key?: (i: number) => string): number {
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const k = key?.(i);
    fsm.apply(++index, k === undefined ? { atMs, cmd: cmdAt(i) } : keyed(i, k, cmdAt(i)));
  }
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = cpuSeconds(c0);
  const fmt = (x: number): string => Math.round(x).toLocaleString('en-US').padStart(9);
  console.log(`${label.padEnd(44)} ${n.toLocaleString('en-US').padStart(10)} applies: ${fmt(n / s)}/s wall, ${fmt(n / cpu)}/s per CPU-second`);
  return n / s;
}

/** CPU time (user + system) of this process since c0: less sensitive than wall time to
 *  other processes sharing the machine (the numbers in docs/lock-fsm.md give both). */
function cpuSeconds(c0: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(c0);
  return (d.user + d.system) / 1e6;
}

function time<T>(label: string, f: () => T): T {
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  const v = f();
  console.log(`${label.padEnd(44)} ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(0).padStart(6)} ms wall, ${(cpuSeconds(c0) * 1000).toFixed(0).padStart(6)} ms CPU`);
  return v;
}

function main(): void {
  if (process.argv.includes('--only-deadlock')) return deadlockBench();
  console.log(`lock-fsm bench: N=${N.toLocaleString('en-US')} (node ${process.version}${gc ? '' : ', WITHOUT --expose-gc: heap figures are rough'})`);
  keyMemory(Math.min(N, 500_000)); // first, on an otherwise empty heap
  const opts = { maxSessions: 2 * N + 10, idempotencyMaxKeys: 1_000_000 };
  const fsm = new LockFsm(opts);
  // Heap deltas include the id/name strings and an 8-byte array slot each (the bench keeps
  // them in arrays to reuse them); that slot is the only part a real node would not have.
  const h0 = heapMB();
  const ids = Array.from({ length: N }, (_, i) => sid(i));
  timed('openSession (empty → N sessions)', N, fsm, (i) => ({ kind: 'openSession', sessionId: ids[i] as string, ttlMs: 10_000, owner: '', lockDelayMs: 0 }));
  const h1 = heapMB();
  const names = Array.from({ length: N }, (_, i) => lockName(i));
  timed('acquire, granted (→ N held locks)', N, fsm, (i) => ({ kind: 'acquire', name: names[i] as string, sessionId: ids[i] as string, waitMs: 0 }));
  const h2 = heapMB();
  console.log(`heap: ${((h1 - h0) * 2 ** 20 / N).toFixed(0)} B per idle session, ${((h2 - h1) * 2 ** 20 / N).toFixed(0)} B per held lock (${(h2 - h0).toFixed(0)} MiB in all)`);
  snapshotBench(fsm, opts);
  const M = Math.min(N, 200_000);
  timed('acquire, re-acquire by holder (same token)', M, fsm, (i) => ({ kind: 'acquire', name: names[i] as string, sessionId: ids[i] as string, waitMs: 0 }));
  timed('acquire, lock_held (wait 0)', M, fsm, (i) => ({ kind: 'acquire', name: names[i] as string, sessionId: ids[(i + 1) % N] as string, waitMs: 0 }));
  timed('acquire, queued (wait 30 s)', M, fsm, (i) => ({ kind: 'acquire', name: names[i] as string, sessionId: ids[(i + 1) % N] as string, waitMs: 30_000 }));
  timed('release, handed to the waiter', M, fsm, (i) => ({ kind: 'release', name: names[i] as string, sessionId: ids[i] as string }));
  timed('release with Idempotency-Key, lock freed', M, fsm, (i) => ({ kind: 'release', name: names[i] as string, sessionId: ids[(i + 1) % N] as string }), (i) => `rel-${i}`);
  timed('acquire with Idempotency-Key, granted', M, fsm, (i) => ({ kind: 'acquire', name: names[i] as string, sessionId: ids[i] as string, waitMs: 0 }), (i) => `acq-${i}`);
  timed('closeSession (1 lock) / openSession', M, fsm, (i) => (i % 2 === 0
    ? { kind: 'closeSession', sessionId: ids[i >> 1] as string }
    : { kind: 'openSession', sessionId: ids[i >> 1] as string, ttlMs: 10_000, owner: '', lockDelayMs: 0 }));
  timed('expireSession, unknown session (no-op)', M, fsm, (i) => ({ kind: 'expireSession', sessionId: `gone-${i}` }));
  const c = fsm.counts();
  console.log(`end state: ${c.sessions.toLocaleString('en-US')} sessions, ${c.heldLocks.toLocaleString('en-US')} held locks, ${c.waiters} waiters, ${fsm.core.idem.size.toLocaleString('en-US')} idempotency keys`);
  deadlockBench();
}

/**
 * Lock sets and deadlock detection (docs/lock-fsm.md "Lock sets", "Deadlock detection").
 * State: DL_SESSIONS sessions, each holding one lock of its own ("own-i"); the first
 * H·QUEUE of them wait, QUEUE to a queue, on H hot locks held by H other sessions. Measured:
 *  - a new waiter that holds nothing: the walk is skipped (O(1));
 *  - a new waiter that holds a lock nobody waits for, at the tail of a QUEUE-long queue:
 *    the backward walk settles it in one step;
 *  - the holder of a lock QUEUE sessions wait for joins the tail of another QUEUE-long
 *    queue: both walks are long, the one that runs out first decides (~2·QUEUE edges);
 *  - the worst case, a chain through every waiting session: session i holds chain-i and
 *    waits for chain-(i+1); a wait that closes the chain into a cycle (deadlock) and one
 *    that reaches the whole chain without a cycle both walk all of it;
 *  - acquire-all granted at once (2 and 8 names), and queued behind a held name.
 */
function deadlockBench(): void {
  const S = DL_SESSIONS;
  const H = Math.max(1, Math.floor(S / 2 / QUEUE));
  console.log(`\ndeadlock detection and lock sets: ${S.toLocaleString('en-US')} sessions, ${H} queues of ${QUEUE} waiters (each waiter also holds a lock)`);
  const fsm = new LockFsm({ maxSessions: 2 * S + 10_000, maxWaitersPerLock: QUEUE + 10, idempotencyMaxKeys: 1_000_000 });
  const ids = Array.from({ length: S }, (_, i) => sid(i));
  const open = (id: string): Command => ({ kind: 'openSession', sessionId: id, ttlMs: 10_000, owner: '', lockDelayMs: 0 });
  timed('openSession', S, fsm, (i) => open(ids[i] as string));
  timed('acquire own-i, granted', S, fsm, (i) => ({ kind: 'acquire', name: `own-${i}`, sessionId: ids[i] as string, waitMs: 0 }));
  // hot locks: held by the last H sessions; the first H·QUEUE sessions queue on them
  for (let h = 0; h < H; h++) fsm.apply(++index, { atMs, cmd: { kind: 'acquire', name: `hot-${h}`, sessionId: ids[S - 1 - h] as string, waitMs: 0 } });
  const waiting = Math.min(H * QUEUE, S - H);
  timed(`acquire hot, queued by a holder (queue → ${QUEUE})`, waiting, fsm, (i) => ({ kind: 'acquire', name: `hot-${i % H}`, sessionId: ids[i] as string, waitMs: 30_000 }));

  // a new waiter at the tail of a long queue
  const fresh = Array.from({ length: 2000 }, (_, i) => `fresh-${i}`);
  timed('openSession (holds nothing)', fresh.length, fsm, (i) => open(fresh[i] as string));
  walkPairs('queued, holds nothing: walk skipped', fsm, fresh, (i) => `hot-${i % H}`);
  timed('fresh sessions take a lock each', fresh.length, fsm, (i) => ({ kind: 'acquire', name: `fresh-own-${i}`, sessionId: fresh[i] as string, waitMs: 0 }));
  walkPairs(`queued at the tail of ${QUEUE}, holds a lock: walk`, fsm, fresh, (i) => `hot-${i % H}`);
  // both walks long: the holder of a hot lock (QUEUE wait for it) joins the tail of another
  const hotHolders = Array.from({ length: 2000 }, (_, i) => ids[S - 1 - (i % H)] as string);
  walkPairs(`holder of a ${QUEUE}-queue lock joins another's tail`, fsm, hotHolders, (i) => `hot-${(i + 1) % H}`);

  // the worst case: a chain through every waiting session
  const C = Math.min(S, 100_000);
  const chain = new LockFsm({ maxSessions: C + 10, idempotencyMaxKeys: 1_000_000 });
  timed('chain: openSession', C, chain, (i) => open(ids[i] as string));
  timed('chain: acquire chain-i, granted', C, chain, (i) => ({ kind: 'acquire', name: `chain-${i}`, sessionId: ids[i] as string, waitMs: 0 }));
  timed('chain: acquire chain-(i+1), queued (i waits for i+1)', C - 1, chain, (i) => ({ kind: 'acquire', name: `chain-${i + 1}`, sessionId: ids[i] as string, waitMs: 30_000 }));
  const last = chain.core.sessions.get(ids[C - 1] as string);
  const toHead = { target: 'lock' as const, names: ['chain-0'], shared: false };
  const closing = last ? walkNewWait(chain.core, last, toHead).steps : 0;
  const closeCycle = time(`chain: session ${C - 1} waits for chain-0 (deadlock)`, () => chain.apply(++index, { atMs, cmd: { kind: 'acquire', name: 'chain-0', sessionId: ids[C - 1] as string, waitMs: 30_000 } }));
  const r = closeCycle.result;
  console.log(`${''.padEnd(44)} answer: ${r.ok ? r.kind : r.code}${!r.ok && r.code === 'deadlock' ? `, a cycle of ${r.cycle.length} sessions` : ''}; walks ${closing.toLocaleString('en-US')} edges`);
  // the chain's last session (every other session of the chain waits for it, through the
  // others: the backward walk would be the whole chain) waits for a lock whose holder
  // waits for nothing: the forward walk ends at once, and decides
  chain.apply(++index, { atMs, cmd: open('elsewhere') });
  chain.apply(++index, { atMs, cmd: { kind: 'acquire', name: 'hot-elsewhere', sessionId: 'elsewhere', waitMs: 0 } });
  const aside = { target: 'lock' as const, names: ['hot-elsewhere'], shared: false };
  const deciding = last ? walkNewWait(chain.core, last, aside).steps : 0;
  const noCycle = time(`chain: session ${C - 1} waits for another lock`, () => chain.apply(++index, { atMs, cmd: { kind: 'acquire', name: 'hot-elsewhere', sessionId: ids[C - 1] as string, waitMs: 30_000 } }));
  console.log(`${''.padEnd(44)} answer: ${noCycle.result.ok ? noCycle.result.kind : noCycle.result.code}; walks ${deciding.toLocaleString('en-US')} edges (its holder waits for nothing: the forward walk decides)`);

  // lock sets
  const M = Math.min(S, 50_000);
  const sets = new LockFsm({ maxSessions: M + 10, idempotencyMaxKeys: 1_000_000 });
  timed('sets: openSession', M, sets, (i) => open(ids[i] as string));
  timed('acquireAll of 2 names, granted', M, sets, (i) => ({ kind: 'acquireAll', names: [`acct-${2 * i + 1}`, `acct-${2 * i}`], sessionId: ids[i] as string, waitMs: 0 }));
  timed('releaseAll of 2 names', M, sets, (i) => ({ kind: 'releaseAll', names: [`acct-${2 * i}`, `acct-${2 * i + 1}`], sessionId: ids[i] as string }));
  const eight = (i: number): string[] => Array.from({ length: 8 }, (_, k) => `acct-${8 * i + k}`);
  timed('acquireAll of 8 names, granted', M, sets, (i) => ({ kind: 'acquireAll', names: eight(i), sessionId: ids[i] as string, waitMs: 0 }));
  timed('acquireAll of 8 names, queued behind a holder', M - 1, sets, (i) => ({ kind: 'acquireAll', names: eight(i + 1), sessionId: ids[i] as string, waitMs: 30_000 }));
  timed('releaseAll of 8 names, next set granted', M - 1, sets, (i) => ({ kind: 'releaseAll', names: eight(i + 1), sessionId: ids[i + 1] as string }));
}

/** times a queued acquire of `lockOf(i)` by each of `who`, each cancelled again (untimed)
 *  so the queues keep their length; reports applies per second and the walk's edges */
function walkPairs(label: string, fsm: LockFsm, who: string[], lockOf: (i: number) => string): void {
  let ns = 0n, cpu = 0, steps = 0;
  for (let i = 0; i < who.length; i++) {
    const sessionId = who[i] as string;
    const name = lockOf(i);
    const s = fsm.core.sessions.get(sessionId);
    if (s) steps += walkNewWait(fsm.core, s, { target: 'lock', names: [name], shared: false }).steps;
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const at = ++index;
    const r = fsm.apply(at, { atMs, cmd: { kind: 'acquire', name, sessionId, waitMs: 30_000 } });
    ns += process.hrtime.bigint() - t0;
    cpu += cpuSeconds(c0);
    if (!(r.result.ok && r.result.kind === 'queued')) throw new Error(`${label}: ${JSON.stringify(r.result)}`);
    fsm.apply(++index, { atMs, cmd: { kind: 'cancelWait', name, sessionId, since: at } });
  }
  const s = Number(ns) / 1e9;
  const fmt = (x: number): string => Math.round(x).toLocaleString('en-US').padStart(9);
  console.log(`${label.padEnd(44)} ${who.length.toLocaleString('en-US').padStart(10)} applies: ${fmt(who.length / s)}/s wall, ${fmt(who.length / cpu)}/s per CPU-second; ${(1e6 * s / who.length).toFixed(1)} µs each, walk ${Math.round(steps / who.length).toLocaleString('en-US')} edges`);
}

/** heap per remembered Idempotency-Key: a 21-char key, an error result, its binding (a
 *  ~30-char lock name as decoded from the log, a 32-hex digest, an interned principal) */
function keyMemory(n: number): void {
  const fsm = new LockFsm({ idempotencyMaxKeys: n + 1 });
  const keys = Array.from({ length: n }, (_, i) => flat(`job-${String(i).padStart(17, '0')}`));
  const h0 = heapMB();
  for (let i = 0; i < n; i++) fsm.apply(i + 1, keyed(i, keys[i] as string, { kind: 'release', name: flat(lockName(i)), sessionId: 'no-such-session' }));
  const h1 = heapMB();
  console.log(`heap: ${((h1 - h0) * 2 ** 20 / n).toFixed(0)} B per remembered Idempotency-Key with its binding, besides the key string (${n.toLocaleString('en-US')} keys of ${fsm.core.idem.size.toLocaleString('en-US')} kept)`);
}

function snapshotBench(fsm: LockFsm, opts: { maxSessions: number; idempotencyMaxKeys: number }): void {
  const c = fsm.counts();
  console.log(`snapshot of ${c.sessions.toLocaleString('en-US')} sessions + ${c.heldLocks.toLocaleString('en-US')} held locks:`);
  const state = time('  exportState (canonical, sorted)', () => exportState(fsm));
  const bytes = time('  msgpackr encode', () => packr.pack(state));
  console.log(`${'  size'.padEnd(44)} ${(bytes.length / 2 ** 20).toFixed(1)} MiB (${(bytes.length / c.sessions).toFixed(1)} B per session holding one lock)`);
  const decoded = time('  msgpackr decode', () => packr.unpack(bytes));
  const copy = time('  importState (validate + rebuild)', () => LockFsm.fromState(decoded, opts));
  const again = copy.snapshot((v) => packr.pack(v));
  console.log(`  restored copy encodes to identical bytes: ${Buffer.compare(Buffer.from(bytes), Buffer.from(again)) === 0}`);
}

main();
