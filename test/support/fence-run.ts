// A jepsen-lite style run against a fenced store (docs/client.md "Fencing in your
// database"): worker processes (fence-worker.ts) take one lock on a real raftlock cluster
// in kept-alive sessions and increment a counter in MySQL or Redis through the fence. The
// nemesis SIGSTOPs a worker that has just been granted the lock, keeps it stopped until
// its session has expired and another holder has raised the store's fence past its token,
// then SIGCONTs it: the worker, unaware, writes with its stale token. The run ends once it
// has made `pauses` such pauses and seen `minWrites` accepted writes, or at
// `maxDurationMs` (bounded in faults and in time, whatever the machine's load); which
// grants are paused comes from a printed seed.
//
// checkFencedRun then judges what the store accepted: the accepted writes, in the store's
// order, carry non-decreasing tokens (no stale write landed), each read the value the one
// before wrote (no lost update), and every write a resumed worker made after the fence had
// passed its token was refused with RLF01.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { seededRng } from '../../src/raft/core/rng.js';
import type { StoreKind } from './fence-stores.js';
import type { WorkerArgs, WorkerEvent } from './fence-worker.js';

const here = dirname(fileURLToPath(import.meta.url));
const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
const workerArgv = [...(ext === '.ts' ? ['--import', 'tsx'] : []), join(here, `fence-worker${ext}`)];

export interface FenceRunOptions {
  endpoints: string[];
  store: StoreKind;
  target: string;
  lock: string;
  /** the store's recorded fence for `lock` (polled by the nemesis) */
  fenceOf: () => Promise<number>;
  seed: number;
  workers?: number;
  ttlMs?: number;
  thinkMs?: number;
  /** how many holders to pause (default 3) */
  pauses?: number;
  /** accepted writes to see before stopping (default 10) */
  minWrites?: number;
  /** the run stops here at the latest (default 30 s) */
  maxDurationMs?: number;
  log?: (line: string) => void;
}

export interface PauseRecord {
  worker: string;
  token: number;
  pausedAt: number;
  resumedAt: number;
  /** the store's fence when the worker was resumed */
  fenceAtResume: number;
}

export type WriteEvent = Extract<WorkerEvent, { ev: 'write' }>;

export interface FenceRunResult {
  writes: WriteEvent[];
  pauses: PauseRecord[];
  notes: string[];
  /** workers that did not exit on their own when told to stop */
  killed: string[];
}

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function runFencedWorkers(o: FenceRunOptions): Promise<FenceRunResult> {
  const rng = seededRng(o.seed);
  const n = o.workers ?? 3;
  const ttlMs = o.ttlMs ?? 1000;
  const wantPauses = o.pauses ?? 3;
  const minWrites = o.minWrites ?? 10;
  const start = Date.now();
  const endAt = start + (o.maxDurationMs ?? 30_000);
  const writes: WriteEvent[] = [];
  const pauses: PauseRecord[] = [];
  const notes: string[] = [];
  const procs = new Map<string, ChildProcess>();
  let pausing = false;
  // pause the k-th grant after the last resume, k drawn from the seed
  let grantsUntilPause = rng.int(2, 5);
  const nemesis: Promise<void>[] = [];

  const pause = async (name: string, p: ChildProcess, token: number): Promise<void> => {
    const pausedAt = Date.now();
    p.kill('SIGSTOP');
    let fence = await o.fenceOf();
    // until another holder has written past the paused one's token (bounded: the lock
    // passes one TTL after the pause, plus an election at worst)
    const deadline = pausedAt + 10 * ttlMs + 3000;
    while (fence <= token && Date.now() < deadline) {
      await delay(20);
      fence = await o.fenceOf();
    }
    const resumedAt = Date.now();
    p.kill('SIGCONT');
    pauses.push({ worker: name, token, pausedAt, resumedAt, fenceAtResume: fence });
    o.log?.(`# paused ${name} holding token ${token} for ${resumedAt - pausedAt} ms; the store's fence was ${fence} at resume`);
    grantsUntilPause = rng.int(2, 5);
    pausing = false;
  };
  /** every pause is over, and each paused worker has made its write after its resume */
  const pausesSettled = (): boolean =>
    !pausing && pauses.every((p) => writes.some((w) => w.name === p.worker && w.token === p.token && w.tStart >= p.resumedAt));

  const exits: Promise<void>[] = [];
  try {
    for (let i = 1; i <= n; i++) {
      const name = `w${i}`;
      const args: WorkerArgs = { name, endpoints: o.endpoints, store: o.store, target: o.target, lock: o.lock, ttlMs, thinkMs: o.thinkMs ?? 200, deadline: endAt + 60_000 };
      const p = spawn(process.execPath, [...workerArgv, JSON.stringify(args)], { stdio: ['pipe', 'pipe', 'pipe'] });
      procs.set(name, p);
      exits.push(new Promise((r) => p.once('exit', () => r())));
      p.stderr!.on('data', (b: Buffer) => notes.push(`${name} stderr: ${b.toString().trim().slice(0, 400)}`));
      createInterface({ input: p.stdout! }).on('line', (line) => {
        let e: WorkerEvent;
        try {
          e = JSON.parse(line) as WorkerEvent;
        } catch {
          notes.push(`${name}: ${line.slice(0, 400)}`);
          return;
        }
        if (e.ev === 'write') writes.push(e);
        else if (e.ev === 'note') notes.push(`${name}: ${e.message}`);
        else if (e.ev === 'holding' && !pausing && pauses.length < wantPauses && --grantsUntilPause <= 0) {
          pausing = true;
          nemesis.push(pause(name, p, e.token));
        }
      });
    }
    const okWrites = (): number => writes.filter((w) => w.result === 'ok').length;
    while (Date.now() < endAt && !(pauses.length >= wantPauses && okWrites() >= minWrites && pausesSettled())) await delay(50);
    await Promise.all(nemesis);
  } finally {
    for (const p of procs.values()) {
      p.kill('SIGCONT');
      p.stdin?.end('stop\n');
    }
  }
  const killed: string[] = [];
  const all = Promise.all(exits);
  const timer = setTimeout(() => {
    for (const [name, p] of procs) {
      if (p.exitCode === null && p.signalCode === null) {
        killed.push(name);
        p.kill('SIGKILL');
      }
    }
  }, 15_000);
  await all;
  clearTimeout(timer);
  return { writes, pauses, notes, killed };
}

/** One write the store accepted, in the store's own order. */
export interface AcceptedWrite {
  token: number;
  writer: string;
  read: number;
  wrote: number;
}

export interface FenceCheck {
  violations: string[];
  accepted: number;
  refused: number;
  /** writes made by resumed workers after the fence had passed their token */
  lateWrites: number;
}

/**
 * `accepted` in the store's order (MySQL: its log's commit order; Redis: by the value
 * written, each value unique when no update was lost); `final`: the counter and the fence
 * as stored at the end.
 */
export function checkFencedRun(run: Pick<FenceRunResult, 'writes' | 'pauses'>, accepted: AcceptedWrite[], final: { counter: number; fence: number }): FenceCheck {
  const v: string[] = [];
  let highest = 0;
  accepted.forEach((w, i) => {
    if (w.token < highest) v.push(`stale write landed: #${i + 1} by ${w.writer} with token ${w.token} after token ${highest} had written`);
    highest = Math.max(highest, w.token);
    if (w.read !== i || w.wrote !== i + 1) v.push(`lost update: #${i + 1} by ${w.writer} (token ${w.token}) read ${w.read} and wrote ${w.wrote}, expected to read ${i}`);
  });
  if (final.counter !== accepted.length) v.push(`the counter is ${final.counter}, but ${accepted.length} writes were accepted`);
  if (accepted.length > 0 && final.fence < highest) v.push(`the fence is ${final.fence}, below the accepted token ${highest}`);
  // what the workers were told agrees with what the store holds
  const key = (w: { token: number; wrote: number }): string => `${w.token}/${w.wrote}`;
  const told = run.writes.filter((w) => w.result === 'ok').map((w) => key(w as { token: number; wrote: number })).sort();
  const stored = accepted.map(key).sort();
  if (told.join(',') !== stored.join(',')) v.push(`the writes acknowledged to workers (${told.join(',')}) differ from those the store holds (${stored.join(',')})`);
  for (const w of run.writes) if (w.result === 'error') v.push(`${w.name}'s write with token ${w.token} failed: ${w.message}`);
  // every write a worker made after it was resumed past the fence was refused
  let lateWrites = 0;
  for (const p of run.pauses) {
    if (p.fenceAtResume <= p.token) continue;
    const late = run.writes.filter((w) => w.name === p.worker && w.token === p.token && w.tStart >= p.resumedAt);
    lateWrites += late.length;
    if (late.length === 0) v.push(`${p.worker} was resumed past the fence (token ${p.token} < ${p.fenceAtResume}) but made no write`);
    for (const w of late) if (w.result !== 'stale') v.push(`${p.worker}'s late write with token ${p.token} (fence ${p.fenceAtResume}) was ${w.result}, not refused`);
  }
  return { violations: v, accepted: accepted.length, refused: run.writes.filter((w) => w.result === 'stale').length, lateWrites };
}

/** What every fenced run must show (docs/client.md "Fencing in your database"): no violation, every worker
 *  stopped when told, progress, and at least one paused holder's late write refused; the
 *  figures go to the test's diagnostics first. */
export function assertFencedRun(run: FenceRunResult, check: FenceCheck, startedMs: number, diagnostic: (line: string) => void): void {
  diagnostic(`${check.accepted} writes accepted, ${check.refused} refused with RLF01 (${check.lateWrites} of them by resumed workers) in ${Date.now() - startedMs} ms; ${run.pauses.length} pauses`);
  for (const n of run.notes.slice(0, 10)) diagnostic(n);
  assert.deepEqual(check.violations, []);
  assert.deepEqual(run.killed, [], 'every worker stopped when told');
  assert.ok(check.accepted >= 5, `the workers made progress (${check.accepted} writes accepted)`);
  assert.ok(check.lateWrites >= 1, `a paused holder wrote after the lock had passed on, and was refused (pauses: ${JSON.stringify(run.pauses)})`);
}
