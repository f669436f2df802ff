// The election workload of a client process (docs/jepsen-lite.md "Workloads"):
// client-proc.ts keeps the session and runs one iteration after another.
//
// An iteration: campaign for the election (waiting up to wait_ms, a third of the
// campaigns with max_hold_ms, so that the service takes some leaderships away by itself);
// while leader, a few rounds of "check that I still lead" (a proclaim of a new value:
// 409 not_holder means deposed), then read the fenced register and write read + 1 with
// the leadership's fencing token and the session as the writer; resign at the end. A
// leader that learns it lost the election — a refused proclaim (revoked, max hold, its
// session expired), a stale_token at the resource (a newer leader wrote), its session
// reported gone — stops writing at once, as a leader watching its signal would. A leader
// paused in the middle (pause-client) wakes up and writes with its old token: the
// resource must refuse it once a newer leader has written (test/checkers/history/election.ts).
import type { Rng } from '../../src/raft/core/rng.js';
import { httpJson, type Outcome, type Recorder } from './recorder.js';
import { definite, enc, get, grantsOf, holderOf, holdLeft, num, post, sleep, str } from './client-http.js';

export interface ElectionCtx {
  rec: Recorder;
  /** the fenced resource's URL */
  resource: string;
  elections: readonly string[];
  /** this client's id, in the values it proclaims */
  id: string;
  noteSession(s: string, r: Outcome): void;
  /** the session is still this client's current, trusted one */
  sessionAlive(s: string): boolean;
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(0, xs.length)]!;
let round = 0;

export async function electionIteration(ctx: ElectionCtx, rng: Rng, s: string): Promise<void> {
  const { rec } = ctx;
  const name = pick(rng, ctx.elections);
  const waitMs = rng.next() < 0.25 ? 0 : rng.int(100, 1500);
  const maxHoldMs = rng.next() < 0.35 ? rng.int(300, 1500) : undefined;
  const value = `${ctx.id}:${round++}`;
  const hold = maxHoldMs !== undefined ? { max_hold_ms: maxHoldMs } : {};
  const camp = await rec.run(
    'campaign',
    { lock: name, session: s, wait_ms: waitMs, text: value, ...hold },
    post(`/v1/elections/${enc(name)}/campaign`, { session_id: s, value, wait_ms: waitMs, ...hold }, waitMs + 2000),
    waitMs + 4000,
    (a) => definite(a, (b) => ({ token: num(b.fencing_token) ?? -1, ...holdLeft(b) })),
  );
  ctx.noteSession(s, camp);
  if (camp.type !== 'ok') return sleep(rng.int(0, 150));
  const token = camp.value.token!;
  const rounds = rng.int(2, 8);
  for (let k = 0; k < rounds; k++) {
    if (!ctx.sessionAlive(s)) return; // the session expired or is in doubt: no longer leader
    if (k > 0) {
      const v = `${ctx.id}:${round++}`;
      const p = await rec.run('proclaim', { lock: name, session: s, token, text: v }, post(`/v1/elections/${enc(name)}/proclaim`, { session_id: s, value: v }, 1500), 2000, (a) => definite(a, () => ({})));
      ctx.noteSession(s, p);
      if (p.type !== 'ok') return; // deposed (not_holder), or cannot tell: stop leading
    }
    const res = ctx.resource;
    const rr = await rec.run('res-read', { lock: name, token }, () => httpJson(`${res}/read`, 'POST', { lock: name, token }, 2000), 2000, (a) => definite(a, (b) => ({ value: num(b.value) ?? -1 })));
    if (rr.type !== 'ok') return; // stale_token: a newer leader has written
    await sleep(rng.int(50, 250)); // "work": the window a client pause can land in
    const v = rr.value.value! + 1;
    const w = await rec.run('res-write', { lock: name, token, value: v, read: rr.value.value!, writer: s }, () => httpJson(`${res}/write`, 'POST', { lock: name, token, value: v, read: rr.value.value, writer: s }, 2000), 2000, (a) => definite(a, () => ({})));
    if (w.type !== 'ok') return;
    await sleep(rng.int(0, 100));
  }
  const r = await rec.run('resign', { lock: name, session: s, token }, post(`/v1/elections/${enc(name)}/resign`, { session_id: s }, 1500), 3000, (a) => definite(a, () => ({})));
  ctx.noteSession(s, r);
  await sleep(rng.int(0, 150));
}

/** a linearizable read of an election, as history `el-read` (leader as holder / holder_token) */
export function readElection(rec: Recorder, name: string): Promise<Outcome> {
  return rec.run('el-read', { lock: name }, get(`/v1/elections/${enc(name)}`, 1500), 2000, (a) =>
    definite(a, (b) => {
      const l = b.leader as Record<string, unknown> | null | undefined;
      if (!l) return { held: false };
      const out: { held: boolean; holder?: string; holder_token?: number; text?: string } = { held: true };
      const s = str(l.session_id);
      const t = num(l.fencing_token);
      const v = str(l.value);
      if (s !== undefined) out.holder = s;
      if (t !== undefined) out.holder_token = t;
      if (v !== undefined) out.text = v;
      return out;
    }),
  );
}

/** The nemesis's revocation of a lock's holder or of a semaphore's grants (sent by the
 *  probe): for a lock (a shared one too) read it and revoke one holder (every grant of the
 *  name when none is read within 3 s); for a semaphore revoke every grant of the name.
 *  Recorded in the history as `revoke` (with `target` for a semaphore). */
export async function revokeGrants(rec: Recorder, target: 'lock' | 'semaphore', name: string): Promise<{ holder: string | null; revoked: { session: string; token: number }[] | null; type: string }> {
  let holder: string | null = null;
  if (target === 'lock') {
    for (const end = rec.now() + 3000; holder === null && rec.now() < end; ) {
      const r = await rec.run('read', { lock: name }, get(`/v1/locks/${enc(name)}`, 1500), 2000, (a) => definite(a, (b) => ({ held: b.held === true, ...holderOf(b), ...grantsOf(b) })));
      const g = r.type === 'ok' ? r.value.grants ?? [] : [];
      if (g.length > 0) holder = g[Math.floor(g.length / 2)]!.session;
      else await sleep(100);
    }
  }
  const path = target === 'lock' ? `/v1/locks/${enc(name)}/revoke` : `/v1/semaphores/${enc(name)}/revoke`;
  const v = await rec.run('revoke', { lock: name, ...(holder !== null ? { session: holder } : {}), ...(target === 'semaphore' ? { target } : {}) }, post(path, holder !== null ? { session_id: holder } : {}, 2000), 4000, (a) =>
    definite(a, (b) => ({
      revoked: Array.isArray(b.revoked) ? (b.revoked as Record<string, unknown>[]).map((x) => ({ session: str(x.session_id) ?? '', token: num(x.fencing_token) ?? -1 })) : [],
    })),
  );
  return { holder, revoked: v.type === 'ok' ? (v.value.revoked ?? []) : null, type: v.type === 'fail' ? `fail ${v.value.code}` : v.type };
}

/** The nemesis's revocation (sent by the probe): read the election, then revoke its leader
 *  (`POST /v1/locks/{name}/revoke`, the admin right: an election is the lock of its name).
 *  Without a leader (none read for 3 s) it revokes whatever holds the name. */
export async function revokeLeader(rec: Recorder, name: string): Promise<{ leader: string | null; revoked: { session: string; token: number }[] | null; type: string }> {
  // leaders come and go: look for one for up to 3 s
  let leader: string | null = null;
  for (const end = rec.now() + 3000; leader === null && rec.now() < end; ) {
    const r = await readElection(rec, name);
    if (r.type === 'ok' && r.value.holder !== undefined) leader = r.value.holder;
    else await sleep(100);
  }
  const body = leader !== null ? { session_id: leader } : {};
  const v = await rec.run('revoke', { lock: name, ...(leader !== null ? { session: leader } : {}) }, post(`/v1/locks/${enc(name)}/revoke`, body, 2000), 4000, (a) =>
    definite(a, (b) => ({
      revoked: Array.isArray(b.revoked) ? (b.revoked as Record<string, unknown>[]).map((x) => ({ session: str(x.session_id) ?? '', token: num(x.fencing_token) ?? -1 })) : [],
    })),
  );
  return { leader, revoked: v.type === 'ok' ? (v.value.revoked ?? []) : null, type: v.type === 'fail' ? `fail ${v.value.code}` : v.type };
}
