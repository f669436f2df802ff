// The `corrupt` faults: a node's LevelDB directory damaged while the node is dead (kill -9),
// then the node started again (docs/storage.md "Open-time verification", "What LevelDB
// does with a damaged file"). What must happen: the node either recovers without losing
// an acknowledged entry, or refuses to start (exit code 2, one line naming its data
// directory) — then the heal is the documented recovery, remove → wipe → join. It must
// never crash instead of refusing, never report ready while it has not caught up, and
// never vote or acknowledge with a log that went backwards (the losses below that LevelDB
// cannot see are measured, and `corrupt-lost-ack` turns them into lost writes unless the
// cluster refuses the regressed node).
//
// - corrupt-torn-tail: the write-ahead log cut inside its last record (a torn write).
// - corrupt-lost-ack: a disk that lost synced data. With the ⌊n/2⌋ followers F that the
//   leader L needs for a quorum, and the others G down (kill -9: a paused process would
//   still take in the appends queued in its sockets when it resumes), the workload runs;
//   once the leader saw each node of F acknowledge its whole log, F and L are killed
//   together and each log of F is cut inside the first record written after G went down —
//   entries F had synced and acknowledged are gone, and the only other copy is on the dead
//   L. F and G restart: F ∪ G is a quorum without any copy of those committed entries. Electing a leader from it loses acknowledged writes
//   (the linearizability, fencing and durability checkers see it); refusing to start or to
//   vote until the cluster's log is back (L restarts at the heal) is the correct outcome.
//   No node can see such a loss in its own files (LevelDB takes a cut record for a write
//   that never finished), and the one that could, the leader that counted the lost
//   acknowledgements, is dead: this variant measures what the cluster does about it. It is
//   not in the rotation of the default mix (every run would report the same loss until the
//   cluster has a way to refuse it): `--emphasise corrupt-lost-ack` schedules it.
// - corrupt-flip: one bit of a table file (or of the log when there is no table yet).
// - corrupt-missing-file: a table, the newest log, the MANIFEST or CURRENT deleted.
import type { Rng } from '../../src/raft/core/rng.js';
import { flipBit, removeFile, tearLogTail, type Surgery } from './disk-faults.js';
import { pick, shuffle, type DamagedStart, type Injected, type NemesisEnv } from './nemesis.js';

export const CORRUPT_VARIANTS = ['corrupt-torn-tail', 'corrupt-lost-ack', 'corrupt-flip', 'corrupt-missing-file'] as const;
export type CorruptVariant = (typeof CORRUPT_VARIANTS)[number];

/** how long a restarted node is watched for reporting ready while behind */
const READINESS_WATCH_MS = 8000;

export async function injectCorrupt(v: CorruptVariant, env: NemesisEnv, rng: Rng): Promise<Injected> {
  if (v === 'corrupt-lost-ack') {
    const r = await lostAck(env, rng);
    if (r) return r;
  }
  const x = pick(rng, env.nodes);
  const acked = await env.acked(x);
  await env.kill([x]);
  const s = env.surgery(x, (dir) => {
    if (v === 'corrupt-flip') {
      const t = flipBit(dir, rng, 'table');
      return t.file !== null ? t : flipBit(dir, rng, 'log'); // no table yet: the log
    }
    if (v === 'corrupt-missing-file') return removeFile(dir, rng);
    return tearLogTail(dir, rng);
  });
  return afterSurgery(v, env, rng, [{ id: x, acked, surgery: s }]);
}

interface Damaged {
  id: string;
  acked: { match: number; lag: number } | null;
  surgery: Surgery;
}

/** start each damaged node, judge how it started, and build the fault (heal: rebuild what refused) */
async function afterSurgery(v: CorruptVariant, env: NemesisEnv, rng: Rng, ds: Damaged[], extra: { detail?: string; heal?: () => Promise<void>; holdMs?: number } = {}): Promise<Injected> {
  const refused: string[] = [];
  const parts: string[] = [];
  const started = await Promise.all(ds.map((d) => env.restartDamaged(d.id)));
  for (const [i, d] of ds.entries()) {
    const r = started[i]!;
    const verdict = judge(v, d, r);
    parts.push(`${d.id}: ${d.surgery.detail} → ${verdict.text}`);
    if (verdict.problem) env.problem(verdict.problem);
    if (r.exit !== null) refused.push(d.id);
  }
  // a node that came back must not say it is ready before it has caught up
  const serving = ds.filter((d) => !refused.includes(d.id));
  const ready = await Promise.all(serving.map((d) => env.watchReadiness(d.id, READINESS_WATCH_MS)));
  for (const p of ready) if (p !== null) env.problem(`${v}: ${p}`);
  return {
    variant: v,
    detail: [...parts, ...(extra.detail ? [extra.detail] : [])].join('; '),
    holdMs: extra.holdMs ?? rng.int(500, 1500),
    heal: async () => {
      await extra.heal?.();
      for (const id of refused) await env.rebuild(id);
    },
  };
}

/** what the restart of a damaged node says about it: one line, and a problem when it broke a rule */
function judge(v: CorruptVariant, d: Damaged, r: DamagedStart): { text: string; problem?: string } {
  if (r.exit !== null) {
    const how = r.exit.code !== null ? `exit ${r.exit.code}` : `signal ${r.exit.signal}`;
    if (r.exit.code !== 2) return { text: `${how} (not a refusal)`, problem: `${v}: ${d.id} with a damaged disk (${d.surgery.detail}) ended with ${how} instead of refusing to start (exit 2 and one line)` };
    if (r.exit.line === null) return { text: `${how}, no line`, problem: `${v}: ${d.id} refused to start (exit 2) without a line saying why` };
    if (!r.exit.line.includes(r.dataDir)) return { text: `refused: ${r.exit.line.slice(0, 160)}`, problem: `${v}: ${d.id}'s refusal does not name its data directory ${r.dataDir}: ${r.exit.line}` };
    const names = d.surgery.file !== null && r.exit.line.includes(d.surgery.file) ? ', naming the file' : '';
    return { text: `refused in ${r.ms} ms (exit 2${names}): ${r.exit.line.slice(0, 200)}` };
  }
  const loaded = r.loadedLastIndex;
  const ack = d.acked?.match;
  if (loaded !== null && ack !== undefined && loaded < ack) {
    // LevelDB dropped synced records without an error (a torn or damaged last record, a
    // deleted log): the node cannot see it; the cluster must not count it meanwhile
    return { text: `started with its log at index ${loaded}, below the ${ack} it had acknowledged: ${ack - loaded} entries lost without an error` };
  }
  return { text: `started, log at index ${loaded ?? '?'}${ack !== undefined ? ` (had acknowledged ${ack})` : ''}` };
}

async function lostAck(env: NemesisEnv, rng: Rng): Promise<Injected | null> {
  const v = 'corrupt-lost-ack';
  const n = env.nodes.length;
  const l = await env.leader();
  if (l === null) return null;
  const q = Math.floor(n / 2) + 1;
  const others = shuffle(rng, env.nodes.filter((x) => x !== l));
  const f = others.slice(0, q - 1);
  const g = others.slice(q - 1);
  await env.kill(g);
  const marks = new Map(f.map((x) => [x, env.walMark(x)]));
  let back = false;
  try {
    await env.sleep(rng.int(800, 1600)); // commits now need L and every node of F
    // until the leader saw every node of F acknowledge its whole log (bounded)
    const acked = new Map<string, { match: number; lag: number } | null>();
    for (let i = 0; i < 40; i++) {
      for (const x of f) acked.set(x, await env.acked(x));
      if (f.every((x) => acked.get(x)?.lag === 0)) break;
      await env.sleep(50);
    }
    await env.kill([...f, l]);
    const ds: Damaged[] = f.map((x) => ({ id: x, acked: acked.get(x) ?? null, surgery: env.surgery(x, (dir) => tearLogTail(dir, rng, marks.get(x) ?? undefined)) }));
    const gBack = env.restart(g);
    back = true;
    const fault = await afterSurgery(v, env, rng, ds, {
      detail: `${g.join(',')} down (kill -9) while ${[l, ...f].join(',')} committed; kill -9 ${l} (leader) with ${f.join(',')}; ${g.join(',')} restarted: ${[...f, ...g].join(',')} hold no copy of the lost entries and must not elect a leader without them`,
      holdMs: rng.int(1500, 3000),
      heal: () => env.restart([l]),
    });
    await gBack;
    return fault;
  } finally {
    if (!back) await env.restart(g);
  }
}
