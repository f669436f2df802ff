// A lock client as its own OS process, so the nemesis can SIGSTOP it (Kleppmann's paused
// client). Runs the workload with one session (TTL, keepalives in the background) and
// writes every operation to stdout as history JSON lines. Started by the runner with one
// JSON argument (ClientArgs); stops cleanly on a "stop" line on stdin.
//
// The workload, per iteration: acquire a random lock (waiting up to wait_ms) → in the
// critical section read the fenced register, "work", write read+1, sometimes renew or
// check the token → release. Otherwise a linearizable read or a token check. Some waiting
// acquires give up early (their abort comes before their wait_ms runs out), as a caller
// with a shorter deadline would, and then release the name in their session
// (docs/client.md "An acquire that fails never leaves a grant behind").
//
// That is the `lock` workload; `shared` and `semaphore` (client-workloads.ts) and
// `election` (client-election.ts) replace the iteration and read their own names, on the
// same session, keepalives and reader.
//
// Probe mode (role "probe"): no workload; answers the runner's commands on stdin
// (cluster views for leader discovery, reads of every lock after crashes, the nemesis's
// revocations), so that every request to the nodes comes from the client network
// namespace.
import { createInterface } from 'node:readline';
import { seededRng, type Rng } from '../../src/raft/core/rng.js';
import { clockFrom, httpJson, Recorder, type Outcome } from './recorder.js';
import type { HistoryEvent } from '../checkers/history/history.js';
import { definite, enc, get, grantsOf, holderOf, holdLeft, num, post, sleep, str, waitersOf } from './client-http.js';
import { maxHoldOf } from './workloads.js';
import { readSemaphore, semaphoreIteration, sharedIteration, type WorkloadCtx } from './client-workloads.js';
import { electionIteration, readElection, revokeGrants, revokeLeader, type ElectionCtx } from './client-election.js';
import { transferIteration, type TransferCtx } from './client-transfer.js';
import { waitIteration, type WaitCtx } from './client-wait.js';
import type { Workload } from './workloads.js';

export interface ClientArgs {
  role: 'client' | 'probe';
  id: string;
  endpoints: string[];
  resource: string;
  locks: string[];
  /** the shared-lock and semaphore workloads' names (client-workloads.ts) */
  sharedLocks: string[];
  semaphores: string[];
  semLimit: number;
  /** the election workload's names (client-election.ts) */
  elections: string[];
  /** the transfer workload's account locks (client-transfer.ts; absent: none) */
  accounts?: string[];
  /** the wait workload's locks (client-wait.ts; absent: none) */
  waitLocks?: string[];
  /** what this client runs (absent: lock) */
  workload?: Workload;
  ttlMs: number;
  seed: number;
  /** process.hrtime.bigint() of the run's start, as a string */
  t0: string;
}

const args = JSON.parse(process.argv[2] ?? '{}') as ClientArgs;
const now = clockFrom(BigInt(args.t0));
const write = (o: unknown): void => {
  process.stdout.write(JSON.stringify(o) + '\n');
};
const rec = new Recorder(args.id, args.endpoints, now, (e: HistoryEvent) => write(e), args.seed);
let stopping = false;

// ---- session ---------------------------------------------------------------------

const workload: Workload = args.workload ?? 'lock';
let session: string | null = null;
/** the session is in doubt (an indeterminate write): drop it and start a new one */
let sessionSuspect = false;

async function openSession(): Promise<void> {
  while (!stopping) {
    const r = await rec.run('open', { ttl_ms: args.ttlMs }, post('/v1/sessions', { ttl_ms: args.ttlMs, owner: args.id }, 2000), 4000, (a) =>
      definite(a, (b) => ({ session: str(b.session_id) ?? '' })),
    );
    if (r.type === 'ok' && r.value.session) {
      session = r.value.session;
      sessionSuspect = false;
      return;
    }
    await sleep(200);
  }
}

async function closeSession(s: string): Promise<void> {
  await rec.run('close', { session: s }, (ep, key) => httpJson(`${ep}/v1/sessions/${enc(s)}`, 'DELETE', undefined, 2000, { 'idempotency-key': key }), 3000, (a) =>
    definite(a, (b) => ({ released: Array.isArray(b.released) ? (b.released as string[]) : [] })),
  );
}

/** Was the session reported gone? Then forget it (the main loop opens a new one). */
function noteSession(s: string, r: Outcome): void {
  if (r.type === 'fail' && r.value.code === 'session_not_found' && session === s) session = null;
  if (r.type === 'info' && session === s) sessionSuspect = true;
}

async function keepaliveLoop(): Promise<void> {
  while (!stopping) {
    const s = session;
    if (s && !sessionSuspect) {
      const r = await rec.run('keepalive', { session: s }, post(`/v1/sessions/${enc(s)}/keepalive`, undefined, 1000), 1200, (a) => definite(a, () => ({})));
      if (r.type === 'fail' && r.value.code === 'session_not_found' && session === s) session = null;
    }
    await sleep(Math.floor(args.ttlMs / 4));
  }
}

const workloadCtx: WorkloadCtx = {
  rec,
  resource: args.resource,
  sharedLocks: args.sharedLocks,
  semaphores: args.semaphores,
  semLimit: args.semLimit,
  noteSession: (s, r) => noteSession(s, r),
};

const electionCtx: ElectionCtx = {
  rec,
  resource: args.resource,
  elections: args.elections,
  id: args.id,
  noteSession: (s, r) => noteSession(s, r),
  sessionAlive: (s) => session === s && !sessionSuspect,
};

const transferCtx: TransferCtx = {
  rec,
  resource: args.resource,
  accounts: args.accounts ?? [],
  noteSession: (s, r) => noteSession(s, r),
};

const waitCtx: WaitCtx = {
  rec,
  names: args.waitLocks ?? [],
  noteSession: (s, r) => noteSession(s, r),
  sessionAlive: (s) => session === s && !sessionSuspect,
};

// ---- the workload ------------------------------------------------------------------

async function criticalSection(rng: Rng, lock: string, s: string, token: number): Promise<void> {
  const res = args.resource;
  const rr = await rec.run('res-read', { lock, token }, () => httpJson(`${res}/read`, 'POST', { lock, token }, 2000), 2000, (a) =>
    definite(a, (b) => ({ value: num(b.value) ?? -1 })),
  );
  if (rr.type === 'ok') {
    await sleep(rng.int(50, 300)); // "work": the window a pause can land in
    const v = rr.value.value! + 1;
    await rec.run('res-write', { lock, token, value: v, read: rr.value.value! }, () => httpJson(`${res}/write`, 'POST', { lock, token, value: v, read: rr.value.value }, 2000), 2000, (a) =>
      definite(a, () => ({})),
    );
  }
  if (rng.next() < 0.2) {
    const r = await rec.run('renew', { lock, session: s }, post(`/v1/locks/${enc(lock)}/renew`, { session_id: s }, 1500), 2000, (a) =>
      definite(a, (b) => ({ token: num(b.fencing_token) ?? -1, ...holdLeft(b) })),
    );
    noteSession(s, r);
  }
  if (rng.next() < 0.2) await checkToken(lock, token);
  await sleep(rng.int(0, 150));
}

async function checkToken(lock: string, token: number): Promise<void> {
  await rec.run('check', { lock, token }, get(`/v1/locks/${enc(lock)}/check?fencing_token=${token}`, 1500), 2000, (a) => definite(a, (b) => ({ current: b.current === true })));
}

async function readLock(lock: string): Promise<Outcome> {
  return rec.run('read', { lock }, get(`/v1/locks/${enc(lock)}`, 1500), 2000, (a) =>
    definite(a, (b) => ({ held: b.held === true, ...holderOf(b), ...grantsOf(b), ...waitersOf(b) })),
  );
}

async function iteration(rng: Rng, lastTokens: Map<string, number>): Promise<void> {
  if (!session || sessionSuspect) {
    if (session && sessionSuspect) await closeSession(session);
    session = null;
    await openSession();
    return;
  }
  const s = session;
  if (workload === 'shared') return sharedIteration(workloadCtx, rng, s);
  if (workload === 'semaphore') return semaphoreIteration(workloadCtx, rng, s);
  if (workload === 'election') return electionIteration(electionCtx, rng, s);
  if (workload === 'transfer') return transferIteration(transferCtx, rng, s);
  if (workload === 'wait') return waitIteration(waitCtx, rng, s);
  const lock = args.locks[rng.int(0, args.locks.length)]!;
  if (rng.next() < 0.25) {
    if (rng.next() < 0.5 || !lastTokens.has(lock)) await readLock(lock);
    else await checkToken(lock, lastTokens.get(lock)!);
    await sleep(rng.int(0, 100));
    return;
  }
  const waitMs = rng.next() < 0.3 ? 0 : rng.int(100, 1500);
  // a caller with a deadline shorter than its wait: gives up after 50 ms … wait_ms − 50 ms
  const giveUpMs = waitMs >= 200 && rng.next() < 0.3 ? rng.int(50, waitMs - 50) : undefined;
  const hold = maxHoldOf(rng);
  const giveUp = giveUpMs === undefined ? undefined : AbortSignal.timeout(giveUpMs);
  const acq = await rec.run(
    'acquire',
    { lock, session: s, wait_ms: waitMs, ...hold, ...(giveUpMs !== undefined ? { give_up_ms: giveUpMs } : {}) },
    post(`/v1/locks/${enc(lock)}/acquire`, { session_id: s, wait_ms: waitMs, ...hold }, waitMs + 2000, giveUp),
    waitMs + 4000,
    (a) => definite(a, (b) => ({ token: num(b.fencing_token) ?? -1, ...holdLeft(b) })),
    giveUp,
  );
  if (acq.type === 'info' && acq.value.code === 'gave-up') {
    // The grant may race the abort, or the wait may still be queued: release the name in
    // this session (no token: what it holds of it and its wait). A definite answer — 200,
    // 409 not_holder, 404 — settles it and the session is kept; otherwise it is dropped.
    const rel = await rec.run('release', { lock, session: s }, post(`/v1/locks/${enc(lock)}/release`, { session_id: s }, 1500), 3000, (a) => definite(a, () => ({})));
    noteSession(s, rel);
    await sleep(rng.int(0, 100));
    return;
  }
  noteSession(s, acq);
  if (acq.type !== 'ok') {
    await sleep(rng.int(0, 100));
    return;
  }
  const token = acq.value.token!;
  lastTokens.set(lock, token);
  await criticalSection(rng, lock, s, token);
  const rel = await rec.run('release', { lock, session: s, token }, post(`/v1/locks/${enc(lock)}/release`, { session_id: s, fencing_token: token }, 1500), 3000, (a) =>
    definite(a, () => ({})),
  );
  noteSession(s, rel);
  if (acq.key !== undefined && rng.next() < 0.15 && session === s && !sessionSuspect) await reuseKey(rng, s, lock, acq.key);
  await sleep(rng.int(0, 100));
}

/**
 * A user's job id sent again with another request (docs/api.md "Idempotency"): the key of
 * the acquire just done, now for another lock or for the same lock with another body (a
 * max hold the first did not ask for). The contract answers 422 idempotency_key_reused
 * and changes nothing (test/checkers/history/keys.ts); a server that answers it anyway as a grant gets
 * its "grant" released in the session, as a client would clean up.
 */
async function reuseKey(rng: Rng, s: string, first: string, key: string): Promise<void> {
  const others = args.locks.filter((l) => l !== first);
  const lock = others.length > 0 && rng.next() < 0.5 ? others[rng.int(0, others.length)]! : first;
  const hold = { max_hold_ms: 60_000 + rng.int(0, 1000) };
  const r = await rec.run('acquire', { lock, session: s, wait_ms: 0, ...hold, reused_key: key }, post(`/v1/locks/${enc(lock)}/acquire`, { session_id: s, wait_ms: 0, ...hold }, 2000), 4000, (a) => definite(a, (b) => ({ token: num(b.fencing_token) ?? -1, ...holdLeft(b) })), undefined, key);
  noteSession(s, r);
  if (r.type !== 'ok') return;
  const rel = await rec.run('release', { lock, session: s }, post(`/v1/locks/${enc(lock)}/release`, { session_id: s }, 1500), 3000, (a) => definite(a, () => ({})));
  noteSession(s, rel);
}

/** Linearizable reads and token checks at a steady pace, as their own logical process
 *  (`c3r`), so stale reads have many chances to show up in the history. */
async function readerLoop(rng: Rng, lastTokens: Map<string, number>): Promise<void> {
  const reader = new Recorder(`${args.id}r`, args.endpoints, now, (e: HistoryEvent) => write(e), args.seed + 1);
  while (!stopping) {
    await sleep(rng.int(100, 300));
    if (workload === 'semaphore') {
      await readSemaphore(reader, args.semaphores[rng.int(0, args.semaphores.length)]!);
      continue;
    }
    if (workload === 'election') {
      await readElection(reader, args.elections[rng.int(0, args.elections.length)]!);
      continue;
    }
    const names = workload === 'shared' ? args.sharedLocks : workload === 'transfer' ? (args.accounts ?? []) : workload === 'wait' ? (args.waitLocks ?? []) : args.locks;
    const lock = names[rng.int(0, names.length)]!;
    const token = lastTokens.get(lock);
    if (token !== undefined && rng.next() < 0.3) {
      await reader.run('check', { lock, token }, get(`/v1/locks/${enc(lock)}/check?fencing_token=${token}`, 1500), 2000, (a) => definite(a, (b) => ({ current: b.current === true })));
    } else {
      const r = await reader.run('read', { lock }, get(`/v1/locks/${enc(lock)}`, 1500), 2000, (a) => definite(a, (b) => ({ held: b.held === true, ...holderOf(b), ...grantsOf(b), ...waitersOf(b) })));
      if (r.type === 'ok' && r.value.holder_token !== undefined) lastTokens.set(lock, r.value.holder_token);
    }
  }
}

async function runClient(): Promise<void> {
  const rng = seededRng(args.seed);
  const lastTokens = new Map<string, number>();
  const ka = keepaliveLoop();
  const rd = readerLoop(rng.fork(), new Map());
  while (!stopping) await iteration(rng, lastTokens);
  if (session) await closeSession(session);
  await Promise.all([ka, rd]);
}

// ---- probe mode ----------------------------------------------------------------------

async function clusterViews(): Promise<unknown[]> {
  return Promise.all(
    args.endpoints.map(async (ep) => {
      try {
        const a = await httpJson(`${ep}/v1/cluster`, 'GET', undefined, 700);
        return { endpoint: ep, status: a.status, body: a.body };
      } catch (err) {
        return { endpoint: ep, error: (err as Error).name };
      }
    }),
  );
}

/** which endpoints answer /healthz (the process is up and serving) */
async function health(): Promise<string[]> {
  const up = await Promise.all(args.endpoints.map((ep) => httpJson(`${ep}/healthz`, 'GET', undefined, 700).then((a) => (a.status === 200 ? ep : null), () => null)));
  return up.filter((x): x is string => x !== null);
}

/** One operator request (the membership fault's DELETE), sent from the client namespace:
 *  the first endpoint that answers with something other than 503 (a removed or leaderless
 *  node) wins; null when none answered at all. */
async function anyEndpoint(method: string, path: string, body?: unknown, timeoutMs = 5000): Promise<{ endpoint: string; status: number; body: unknown } | null> {
  let last: { endpoint: string; status: number; body: unknown } | null = null;
  for (const ep of args.endpoints) {
    try {
      const a = await httpJson(ep + path, method, body, timeoutMs);
      last = { endpoint: ep, status: a.status, body: a.body };
      if (a.status !== 503) return last;
    } catch {
      /* down or partitioned: try the next */
    }
  }
  return last;
}

/** read every lock and semaphore until each read has a definite answer (or the deadline) */
async function readAll(deadlineMs: number): Promise<boolean> {
  const end = now() + deadlineMs;
  const sems = new Set(args.semaphores);
  const elections = new Set(args.elections);
  const pending = new Set([...args.locks, ...args.sharedLocks, ...(args.accounts ?? []), ...(args.waitLocks ?? []), ...args.semaphores, ...args.elections]);
  while (pending.size > 0 && now() < end) {
    for (const lock of [...pending]) {
      const r = sems.has(lock) ? await readSemaphore(rec, lock) : elections.has(lock) ? await readElection(rec, lock) : await readLock(lock);
      if (r.type === 'ok') pending.delete(lock);
    }
  }
  return pending.size === 0;
}

async function runProbe(): Promise<void> {
  const rl = createInterface({ input: process.stdin });
  for await (const line of rl) {
    let cmd: { id: number; cmd: 'cluster' | 'read-all' | 'health' | 'http' | 'one' | 'revoke' | 'revoke-grants' | 'stop'; endpoint?: string; target?: 'lock' | 'semaphore'; deadlineMs?: number; method?: string; path?: string; body?: unknown; timeoutMs?: number; name?: string };
    try {
      cmd = JSON.parse(line) as typeof cmd;
    } catch {
      if (line.trim() === 'stop') break;
      continue;
    }
    if (cmd.cmd === 'stop') break;
    let reply: unknown = null;
    if (cmd.cmd === 'cluster') reply = await clusterViews();
    else if (cmd.cmd === 'read-all') reply = await readAll(cmd.deadlineMs ?? 10_000);
    else if (cmd.cmd === 'health') reply = await health();
    else if (cmd.cmd === 'http') reply = await anyEndpoint(cmd.method ?? 'GET', cmd.path ?? '/', cmd.body, cmd.timeoutMs);
    else if (cmd.cmd === 'one') reply = await httpJson(`${cmd.endpoint ?? ''}${cmd.path ?? '/'}`, cmd.method ?? 'GET', cmd.body, cmd.timeoutMs ?? 1000).then((a) => ({ status: a.status, body: a.body }), () => null);
    else if (cmd.cmd === 'revoke') reply = await revokeLeader(rec, cmd.name ?? '');
    else if (cmd.cmd === 'revoke-grants') reply = await revokeGrants(rec, cmd.target ?? 'lock', cmd.name ?? '');
    write({ reply: cmd.id, value: reply });
  }
}

if (args.role === 'probe') {
  await runProbe();
  process.exit(0);
} else {
  createInterface({ input: process.stdin }).on('line', (l) => {
    if (l.trim() === 'stop') stopping = true;
  });
  await runClient();
  write({ done: args.id });
  process.exit(0);
}
