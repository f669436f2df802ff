// The wait workload of a client process (docs/jepsen-lite.md "Workloads"): waits that must
// end by their wait_ms across leader changes (docs/api.md "Waits"), on one lock, jw-0.
//
// Two kinds of iteration:
// - a long hold (3 in 10): acquire jw-0 (waiting up to 1.5 s, retried as usual), hold it
//   12–20 s with the session kept alive, release with the token — so waits queue up
//   behind it for longer than a wait's deadline, fault windows included;
// - a waiter that does not retry (the contract's example): one attempt at an acquire with
//   wait_ms 200–1000. Answered: done (a grant is released with its token). Unanswered (a
//   504, a connection lost to a leader change): the client keeps its session and gives up
//   the acquire, as a caller that moved on would, and cleans up only much later (wait_ms
//   + 25–30 s, after any long hold has ended): a release of jw-0 without a token. The reader reads jw-0 every
//   100–300 ms meanwhile. A wait the cluster forgot to end is granted at the long holder's release,
//   long after its deadline, and the reads show it (test/checkers/history/waits.ts).
import type { Rng } from '../../src/raft/core/rng.js';
import type { Outcome, Recorder } from './recorder.js';
import { definite, enc, holdLeft, num, post, sleep } from './client-http.js';

export interface WaitCtx {
  rec: Recorder;
  names: readonly string[];
  noteSession(s: string, r: Outcome): void;
  /** the session is still this client's, alive and not in doubt */
  sessionAlive(s: string): boolean;
}

export async function waitIteration(ctx: WaitCtx, rng: Rng, s: string): Promise<void> {
  const lock = ctx.names[rng.int(0, ctx.names.length)]!;
  const long = rng.next() < 0.3;
  const waitMs = long ? rng.int(0, 1500) : rng.int(200, 1000);
  const acq = await ctx.rec.run(
    'acquire',
    { lock, session: s, wait_ms: waitMs },
    post(`/v1/locks/${enc(lock)}/acquire`, { session_id: s, wait_ms: waitMs }, waitMs + 2000),
    long ? waitMs + 4000 : 0, // 0: one attempt, no retry
    (a) => definite(a, (b) => ({ token: num(b.fencing_token) ?? -1, ...holdLeft(b) })),
  );
  if (acq.type === 'info' && !long) {
    // gave up without knowing: keep the session, clean up much later
    const until = Date.now() + waitMs + rng.int(25_000, 30_000);
    while (Date.now() < until && ctx.sessionAlive(s)) await sleep(200);
    if (!ctx.sessionAlive(s)) return;
    const rel = await ctx.rec.run('release', { lock, session: s }, post(`/v1/locks/${enc(lock)}/release`, { session_id: s }, 1500), 3000, (a) => definite(a, () => ({})));
    ctx.noteSession(s, rel);
    return sleep(rng.int(0, 100));
  }
  ctx.noteSession(s, acq);
  if (acq.type !== 'ok') return sleep(rng.int(0, 200));
  const token = acq.value.token!;
  await sleep(long ? rng.int(12_000, 20_000) : rng.int(50, 300));
  const rel = await ctx.rec.run('release', { lock, session: s, token }, post(`/v1/locks/${enc(lock)}/release`, { session_id: s, fencing_token: token }, 1500), 3000, (a) => definite(a, () => ({})));
  ctx.noteSession(s, rel);
  await sleep(rng.int(0, 200));
}
