// Lock FSM benchmark: applies per second at scale (1M sessions, 1M held locks), memory per
// idle session and per held lock, snapshot size and export/encode/decode/restore times.
//
//   npm run bench:fsm                 # 1,000,000 sessions and locks
//   npm run bench:fsm -- --n 200000   # smaller
//
// Runs with --expose-gc so heap figures are measured after a full collection.
import { Packr } from 'msgpackr';
import { LockFsm, exportState, type Command, type Envelope } from '../src/lock-fsm/index.js';

const argN = process.argv.indexOf('--n');
const N = argN > 0 ? Number(process.argv[argN + 1]) : 1_000_000;
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
