// The shared-lock and semaphore workloads of a client process (docs/jepsen-lite.md
// "Workloads"); client-proc.ts keeps the session and runs one iteration after another.
//
// shared: acquire the lock shared (a reader, about two in three) or exclusive (a writer),
// waiting up to wait_ms; then begin an access of the access-logged resource (read or
// write) with the grant's token, "work", end it; sometimes renew; release with the token.
// semaphore: acquire 1 or 2 permits of a semaphore (jm-0: a limit fixed for the run; jm-1:
// resized now and then by its clients, between 2 and 3, each acquiring with the limit it
// last learned — its own resize, or a limit_mismatch answer); then begin an access with
// the token and the permits, "work", end it; release.
// A third of the acquires ask for a max hold (workloads.ts maxHoldOf): the service may end
// the grant while the client works, and fencing at the resource keeps that safe.
// Some waiting acquires give up early and release the name in their session without a
// token, as the exclusive workload does (docs/client.md "An acquire that fails never
// leaves a grant behind").
import type { Rng } from '../../src/raft/core/rng.js';
import { httpJson, type Outcome, type Recorder } from './recorder.js';
import type { OpValue } from '../checkers/history/history.js';
import { definite, enc, get, holdLeft, num, post, sleep, str } from './client-http.js';
import { maxHoldOf, RESIZED_SEM, SEM_LIMIT } from './workloads.js';

export interface WorkloadCtx {
  rec: Recorder;
  /** the access-logged resource's URL */
  resource: string;
  sharedLocks: readonly string[];
  semaphores: readonly string[];
  semLimit: number;
  /** a session reported gone is forgotten, one in doubt is dropped (client-proc.ts) */
  noteSession(s: string, r: Outcome): void;
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(0, xs.length)]!;

/** wait 0 or 100–1500 ms; about a third of the waits of 200 ms or more give up early */
function waits(rng: Rng): { waitMs: number; giveUpMs: number | undefined } {
  const waitMs = rng.next() < 0.25 ? 0 : rng.int(100, 1500);
  const giveUpMs = waitMs >= 200 && rng.next() < 0.3 ? rng.int(50, waitMs - 50) : undefined;
  return { waitMs, giveUpMs };
}

/** begin, work, end one access of the access-logged resource */
async function useResource(ctx: WorkloadCtx, rng: Rng, input: OpValue, body: Record<string, unknown>): Promise<void> {
  const begin = await ctx.rec.run('res-begin', input, () => httpJson(`${ctx.resource}/begin`, 'POST', body, 2000), 2000, (a) => definite(a, (b) => ({ value: num(b.active) ?? -1 })));
  if (begin.type !== 'ok') return;
  await sleep(rng.int(50, 300)); // "work": the window a client pause can land in
  await ctx.rec.run('res-end', input, () => httpJson(`${ctx.resource}/end`, 'POST', body, 2000), 2000, (a) => definite(a, () => ({})));
}

export async function sharedIteration(ctx: WorkloadCtx, rng: Rng, s: string): Promise<void> {
  const lock = pick(rng, ctx.sharedLocks);
  const mode = rng.next() < 0.65 ? 'shared' : 'exclusive';
  const { waitMs, giveUpMs } = waits(rng);
  const hold = maxHoldOf(rng);
  const giveUp = giveUpMs === undefined ? undefined : AbortSignal.timeout(giveUpMs);
  const acq = await ctx.rec.run(
    'acquire',
    { lock, session: s, mode, wait_ms: waitMs, ...hold, ...(giveUpMs !== undefined ? { give_up_ms: giveUpMs } : {}) },
    post(`/v1/locks/${enc(lock)}/acquire`, { session_id: s, wait_ms: waitMs, mode, ...hold }, waitMs + 2000, giveUp),
    waitMs + 4000,
    (a) => definite(a, (b) => ({ token: num(b.fencing_token) ?? -1, ...holdLeft(b) })),
    giveUp,
  );
  if (acq.type === 'info' && acq.value.code === 'gave-up') {
    const rel = await ctx.rec.run('release', { lock, session: s }, post(`/v1/locks/${enc(lock)}/release`, { session_id: s }, 1500), 3000, (a) => definite(a, () => ({})));
    ctx.noteSession(s, rel);
    return sleep(rng.int(0, 100));
  }
  ctx.noteSession(s, acq);
  if (acq.type !== 'ok') return sleep(rng.int(0, 100));
  const token = acq.value.token!;
  await useResource(ctx, rng, { lock, token, mode }, { name: lock, token, mode: mode === 'shared' ? 'read' : 'write' });
  if (rng.next() < 0.2) {
    const r = await ctx.rec.run('renew', { lock, session: s, mode }, post(`/v1/locks/${enc(lock)}/renew`, { session_id: s }, 1500), 2000, (a) => definite(a, (b) => ({ token: num(b.fencing_token) ?? -1, ...holdLeft(b) })));
    ctx.noteSession(s, r);
  }
  await sleep(rng.int(0, 100));
  const rel = await ctx.rec.run('release', { lock, session: s, token }, post(`/v1/locks/${enc(lock)}/release`, { session_id: s, fencing_token: token }, 1500), 3000, (a) => definite(a, () => ({})));
  ctx.noteSession(s, rel);
  await sleep(rng.int(0, 100));
}

/** the limit this client last learned for each resized semaphore */
const limits = new Map<string, number>();

export async function semaphoreIteration(ctx: WorkloadCtx, rng: Rng, s: string): Promise<void> {
  const name = pick(rng, ctx.semaphores);
  const resized = name === RESIZED_SEM;
  if (resized && rng.next() < 0.15) {
    const to = (limits.get(name) ?? SEM_LIMIT) === SEM_LIMIT ? SEM_LIMIT + 1 : SEM_LIMIT;
    const r = await ctx.rec.run('sem-limit', { lock: name, limit: to }, (ep, key) => httpJson(`${ep}/v1/semaphores/${enc(name)}/limit`, 'PUT', { limit: to }, 1500, { 'idempotency-key': key }), 3000, (a) => definite(a, (b) => ({ limit: num(b.limit) ?? -1 })));
    if (r.type === 'ok') limits.set(name, to);
    return sleep(rng.int(0, 100));
  }
  const permits = rng.next() < 0.6 ? 1 : 2;
  const limit = resized ? limits.get(name) ?? SEM_LIMIT : ctx.semLimit;
  const { waitMs, giveUpMs } = waits(rng);
  const hold = maxHoldOf(rng);
  const giveUp = giveUpMs === undefined ? undefined : AbortSignal.timeout(giveUpMs);
  const acq = await ctx.rec.run(
    'sem-acquire',
    { lock: name, session: s, permits, limit, wait_ms: waitMs, ...hold, ...(giveUpMs !== undefined ? { give_up_ms: giveUpMs } : {}) },
    post(`/v1/semaphores/${enc(name)}/acquire`, { session_id: s, limit, permits, wait_ms: waitMs, ...hold }, waitMs + 2000, giveUp),
    waitMs + 4000,
    (a) => definite(a, (b) => ({ token: num(b.fencing_token) ?? -1, permits: num(b.permits) ?? -1, limit: num(b.limit) ?? -1, ...holdLeft(b) })),
    giveUp,
  );
  if (acq.type === 'fail' && acq.value.code === 'limit_mismatch' && acq.value.limit !== undefined) limits.set(name, acq.value.limit);
  const release = (): Promise<Outcome> => ctx.rec.run('sem-release', { lock: name, session: s }, post(`/v1/semaphores/${enc(name)}/release`, { session_id: s }, 1500), 3000, (a) => definite(a, () => ({})));
  if (acq.type === 'info' && acq.value.code === 'gave-up') {
    ctx.noteSession(s, await release());
    return sleep(rng.int(0, 100));
  }
  ctx.noteSession(s, acq);
  if (acq.type !== 'ok') return sleep(rng.int(0, 100));
  const token = acq.value.token!;
  const held = acq.value.permits ?? permits;
  await useResource(ctx, rng, { lock: name, token, permits: held }, { name, token, permits: held });
  await sleep(rng.int(0, 100));
  ctx.noteSession(s, await release());
  await sleep(rng.int(0, 100));
}

/** a linearizable read of a semaphore, as history `sem-read` */
export function readSemaphore(rec: Recorder, name: string): Promise<Outcome> {
  return rec.run('sem-read', { lock: name }, get(`/v1/semaphores/${enc(name)}`, 1500), 2000, (a) =>
    definite(a, (b) => {
      const holders = Array.isArray(b.holders) ? (b.holders as Record<string, unknown>[]) : [];
      return {
        limit: num(b.limit) ?? -1,
        in_use: num(b.in_use) ?? -1,
        holders: holders.map((h) => ({ session: str(h.session_id) ?? '', token: num(h.fencing_token) ?? -1, permits: num(h.permits) ?? -1 })),
      };
    }),
  );
}
