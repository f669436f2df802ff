// The nemesis: a seeded schedule of fault episodes (fault → hold → heal → recover → quiet)
// and the code that injects each fault for real: iptables partitions, kill -9 and restart
// on the same data, SIGSTOP/SIGCONT of nodes and of lock clients, packet faults, a crash
// that drops every unsynced write, membership changes, lost and damaged disks, and clocks
// running fast, slow or stepping. The seed fixes the order of the faults and every random
// choice the nemesis makes; the targets that depend on the cluster (who leads) are looked
// up when the fault starts. Every kind is in DEFAULT_FAULTS (`revoke` when the election
// workload runs): docs/jepsen-lite.md "Faults" describes each variant.
//
// This file holds the schedule and the simple kinds; the membership family is in
// nemesis-membership.ts, `corrupt` in nemesis-disk.ts, `clock` in nemesis-clock.ts. The
// runner (run.ts) implements NemesisEnv: the verbs on real processes, disks and networks.
//
// `revoke` takes grants away through the admin API (sent by the probe and recorded in the
// history): the election's leadership (`POST /v1/locks/{name}/revoke` of the leader's
// session: the deposed leader learns it at its next proclaim, and its writes in between
// must be refused by the fenced resource once a newer leader wrote), a lock holder's grant
// (exclusive or shared), or every grant of a semaphore. Which ones depends on the workloads.
import type { Rng } from '../../src/raft/core/rng.js';
import type { Surgery } from './disk-faults.js';
import type { ClockMode } from './clock.js';
import { injectMembership, MEMBERSHIP_VARIANTS, type MembershipVariant } from './nemesis-membership.js';
import { injectCorrupt, CORRUPT_VARIANTS, type CorruptVariant } from './nemesis-disk.js';
import { injectClock, CLOCK_VARIANTS, type ClockVariant } from './nemesis-clock.js';

export const FAULT_CATEGORIES = ['partition', 'kill', 'pause', 'pause-client', 'packet', 'unsynced', 'membership', 'wipe', 'corrupt', 'clock', 'revoke'] as const;
export type FaultCategory = (typeof FAULT_CATEGORIES)[number];
/** every kind: what runs when no --faults is given */
export const DEFAULT_FAULTS: readonly FaultCategory[] = [...FAULT_CATEGORIES];

/** what runs when no --faults is given: every kind (each workload has grants to revoke) */
export function defaultFaults(_workloads: readonly string[]): FaultCategory[] {
  return [...DEFAULT_FAULTS];
}

export type Variant =
  | 'partition-leader' // isolate the leader
  | 'partition-halves' // a random minority | majority split
  | 'partition-ring' // majorities ring: every node sees a majority, no two the same (5 nodes)
  | 'partition-bridge' // two halves joined by one bridge node (5 nodes)
  | 'partition-oneway' // one node receives nothing from the others, but still sends
  | 'partition-partial' // Howard's partial partition: a and b cut, both still see the rest
  | 'kill-one'
  | 'kill-leader'
  | 'kill-minority'
  | 'kill-all' // once per run
  | 'pause-leader' // SIGSTOP the leader for longer than the session TTL (zombie leader)
  | 'pause-follower'
  | 'transfer-leader' // move leadership away twice in a row, nothing stopped (only with --emphasise)
  | 'pause-client' // SIGSTOP a lock holder longer than its TTL (Kleppmann)
  | 'packet' // netem delay/loss/duplication/reordering
  | 'member-replace-leader' // remove the leader through the API, stop it, later join a new node
  | 'member-replace-follower' // the same for a follower
  | 'member-failover-leader' // kill the leader, remove it at once through a follower, restart it; the heal joins a new node while the next leader is dead
  | 'wipe-restart' // lose a voter's data dir and start it again: it must refuse; then remove → join
  | 'revoke-leader' // revoke the election leader's grant (admin API)
  | 'revoke-lock' // revoke a lock holder's grant, exclusive or shared
  | 'revoke-semaphore' // revoke every grant of a semaphore
  | 'unsynced' // kill -9 a majority incl. the leader, losing every unsynced write; once per run
  | MembershipVariant
  | CorruptVariant
  | ClockVariant;

/** every variant, for the command line (--emphasise) */
export const FAULT_VARIANTS = [
  'partition-leader', 'partition-halves', 'partition-ring', 'partition-bridge', 'partition-oneway', 'partition-partial',
  'kill-one', 'kill-leader', 'kill-minority', 'kill-all', 'pause-leader', 'pause-follower', 'transfer-leader', 'pause-client', 'packet',
  'member-replace-leader', 'member-replace-follower', 'member-failover-leader', 'unsynced', 'revoke-leader', 'revoke-lock', 'revoke-semaphore', 'wipe-restart',
  ...MEMBERSHIP_VARIANTS, ...CORRUPT_VARIANTS, ...CLOCK_VARIANTS,
] as const satisfies readonly Variant[];

export const ONCE_PER_RUN: ReadonlySet<Variant> = new Set(['kill-all', 'unsynced']);

/** the variants of a category; `revoke` has one per kind of grant the workloads make */
export function variantsOf(c: FaultCategory, nodes: number, workloads: readonly string[] = ['lock', 'shared', 'semaphore', 'election', 'transfer', 'wait']): Variant[] {
  switch (c) {
    case 'partition':
      return nodes >= 5
        ? ['partition-leader', 'partition-halves', 'partition-ring', 'partition-bridge', 'partition-oneway', 'partition-partial']
        : ['partition-leader', 'partition-halves', 'partition-oneway', 'partition-partial'];
    case 'kill':
      return ['kill-one', 'kill-leader', 'kill-minority', 'kill-all'];
    case 'pause':
      // transfer-leader only when asked for (--emphasise): it is the waits' fault (docs/jepsen-lite.md "Faults")
      return ['pause-leader', 'pause-follower'];
    case 'pause-client':
      return ['pause-client'];
    case 'packet':
      return ['packet'];
    case 'unsynced':
      return ['unsynced'];
    case 'membership':
      return ['member-replace-leader', 'member-replace-follower', 'member-failover-leader', ...MEMBERSHIP_VARIANTS];
    case 'wipe':
      return ['wipe-restart'];
    case 'corrupt':
      // corrupt-lost-ack only when asked for (--emphasise): nemesis-disk.ts says why
      return CORRUPT_VARIANTS.filter((v) => v !== 'corrupt-lost-ack');
    case 'clock':
      return [...CLOCK_VARIANTS];
    case 'revoke':
      return [
        ...(workloads.includes('election') ? ['revoke-leader' as const] : []),
        ...(workloads.includes('lock') || workloads.includes('shared') || workloads.includes('transfer') || workloads.includes('wait') ? ['revoke-lock' as const] : []),
        ...(workloads.includes('semaphore') ? ['revoke-semaphore' as const] : []),
      ];
  }
}

export function categoryOf(v: Variant): FaultCategory {
  if (v.startsWith('partition')) return 'partition';
  if (v.startsWith('kill')) return 'kill';
  if (v === 'pause-client') return 'pause-client';
  if (v === 'transfer-leader') return 'pause';
  if (v.startsWith('pause')) return 'pause';
  if (v.startsWith('member')) return 'membership';
  if (v === 'wipe-restart') return 'wipe';
  if (v.startsWith('corrupt')) return 'corrupt';
  if (v.startsWith('clock')) return 'clock';
  if (v.startsWith('revoke')) return 'revoke';
  return v as FaultCategory;
}

export function shuffle<T>(rng: Rng, xs: readonly T[]): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = rng.int(0, i + 1);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/**
 * The order of fault episodes. Round one has one variant of every enabled category (the
 * once-per-run crashes among them), so even a short run sees every kind; later rounds
 * cycle through the repeatable variants in a fresh shuffled order each, plus one of each
 * `emphasise`d variant per round (`--emphasise kill-all` repeats the crash of every node).
 * Variants in `without` are never scheduled.
 */
export function schedule(rng: Rng, categories: readonly FaultCategory[], nodes: number, length = 400, emphasise: readonly Variant[] = [], workloads?: readonly string[], without: readonly Variant[] = []): Variant[] {
  const of = (c: FaultCategory): Variant[] => variantsOf(c, nodes, workloads).filter((v) => !without.includes(v));
  const first: Variant[] = [];
  for (const c of categories) {
    const vs = of(c);
    if (vs.length === 0) continue;
    if (c === 'kill') first.push('kill-all');
    else first.push(vs[rng.int(0, vs.length)]!);
  }
  const out = shuffle(rng, first);
  // emphasised variants (e.g. kill-all, normally once per run) join every later round
  const repeatable = [...categories.flatMap(of).filter((v) => !ONCE_PER_RUN.has(v)), ...emphasise];
  while (out.length < length && repeatable.length > 0) out.push(...shuffle(rng, repeatable));
  return out.slice(0, length);
}

/**
 * The schedule as the runner walks it, owing a kind until it lands: the runner goes on
 * past the run's end (bounded) while a kind is owed (`owed`), with only those kinds; when an
 * injection fails (a membership change needs a leader with two followers, and right after a crash
 * there may be none yet) and its kind has never been injected in this run, the same
 * variant comes next again, at most `maxRetries` times per kind. A short run on a loaded
 * machine sees only 4–6 episodes, so round one's one-of-every-kind must not be lost to a
 * single refusal (docs/jepsen-lite.md "In `npm test`").
 */
export class FaultPlan {
  private at = 0;
  private readonly landedKinds = new Set<FaultCategory>();
  private readonly retries = new Map<FaultCategory, number>();

  /** the kinds the plan holds: each is owed until it lands (or its retries run out) */
  private readonly kinds: FaultCategory[];

  constructor(private readonly plan: Variant[], private readonly maxRetries = 3) {
    this.kinds = [...new Set(plan.map(categoryOf))];
  }

  /** the kinds not injected yet that may still be tried */
  owed(): FaultCategory[] {
    return this.kinds.filter((c) => !this.landedKinds.has(c) && (this.retries.get(c) ?? 0) < this.maxRetries);
  }

  next(): Variant | undefined {
    return this.plan[this.at++];
  }

  landed(v: Variant): void {
    this.landedKinds.add(categoryOf(v));
  }

  /** true when `v` is tried again next */
  failed(v: Variant): boolean {
    const c = categoryOf(v);
    const tried = this.retries.get(c) ?? 0;
    if (this.landedKinds.has(c) || tried >= this.maxRetries) return false;
    this.retries.set(c, tried + 1);
    this.plan.splice(this.at, 0, v);
    return true;
  }
}

/** How the nemesis reaches the system; the runner implements it. */
export interface NemesisEnv {
  nodes: string[];
  ttlMs: number;
  /** the cluster's election_timeout_ms[1] (the strict reconfiguration check's window is twice it) */
  electionMaxMs: number;
  netns: boolean;
  leader(): Promise<string | null>;
  kill(ids: string[]): Promise<void>;
  restart(ids: string[]): Promise<void>;
  pauseNode(id: string): void;
  resumeNode(id: string): void;
  /** a client in its critical section if one shows up within waitMs, else any client */
  pickHolder(waitMs: number): Promise<string>;
  pauseClient(id: string): void;
  resumeClient(id: string): void;
  split(a: string[], b: string[]): Promise<void>;
  cut(from: string, to: string): Promise<void>;
  healPartitions(): Promise<void>;
  startPacket(): Promise<string>;
  stopPacket(): Promise<void>;
  sleep(ms: number): Promise<void>;
  /** the system misbehaved during a fault (in an injection or a heal): a violation of the run */
  problem(text: string): void;

  // ---- membership (nemesis-membership.ts)
  /** DELETE the member through the API until it is out of the configuration, then stop its
   *  process (and forget it: it leaves `nodes`); throws when the removal cannot be done */
  removeMember(id: string): Promise<void>;
  /** one DELETE /v1/cluster/members/{id}: the first answer that is not a 503, as it came */
  deleteOnce(id: string): Promise<{ status: number | null; text: string }>;
  /** the members as the current leader sees them (id → role), null when no leader answers */
  members(): Promise<Map<string, string> | null>;
  /** start a node with an empty data dir in `slotOf`'s place with --join, under a new id
   *  (or `slotOf`'s own id again: `sameId`); resolves with its id once it is a voter (it
   *  joins `nodes` when it starts) */
  addMember(slotOf: string, o?: { sameId?: boolean }): Promise<string>;
  /** a new voter in the spare slot, etcd's way: member add, then `serve --config --node`
   *  on an empty data dir; resolves with its id once it is a voter */
  growMember(): Promise<{ id: string; grew: boolean }>;
  /** POST /v1/cluster/transfer-leadership {to}: the answer, in one line */
  transferLeadership(to: string | undefined): Promise<string>;
  /** kill -9 `id`, delete its data directory, start it again under its id; resolves once
   *  it exited (or after a bound) with how it ended and the refusal line it printed */
  wipeAndRestart(id: string): Promise<{ code: number | null; line: string | null; ms: number }>;
  /** remove → wipe → join under the same id (docs/storage.md "Corruption recovery") */
  rebuild(id: string): Promise<void>;

  // ---- disks (nemesis-disk.ts)
  /** the leader's view of `id`: the index it acknowledged (the leader's own last index for
   *  the leader) and how far behind the leader's log that is; null without a leader */
  acked(id: string): Promise<{ match: number; lag: number } | null>;
  /** the newest LevelDB write-ahead log file of `id`'s data directory and its size now */
  walMark(id: string): { file: string; size: number } | null;
  /** operate on the data directory of a stopped node */
  surgery(id: string, f: (dir: string) => Surgery): Surgery;
  /** start a node whose disk was damaged; resolves once it serves or exits (bounded) */
  restartDamaged(id: string): Promise<DamagedStart>;
  /** watch a restarted node for `ms`: a problem when it says ready while it has not applied
   *  what the leader had committed seconds before (null: none seen) */
  watchReadiness(id: string, ms: number): Promise<string | null>;

  // ---- clocks (nemesis-clock.ts)
  /** how `id`'s process keeps time: 'rate' (both clocks follow its control file), 'wall'
   *  (only the wall clock does), undefined (no fake clocks in this run) */
  clockMode(id: string): ClockMode | undefined;
  /** write `id`'s libfaketime control: "+0 x2", "+600", … */
  setClock(id: string, spec: string): void;
  /** kill -9 `id` and start it again with only its wall clock faked */
  restartWallClock(id: string): Promise<void>;

  /** revoke the election's leader (the `revoke` fault); resolves with what was done */
  revokeLeader(): Promise<string>;
  /** revoke a holder of a random lock of the workloads, or every grant of a random
   *  semaphore; resolves with what was done */
  revokeGrants(target: 'lock' | 'semaphore'): Promise<string>;
}

/** how a node with a damaged disk started: it exited (the line naming why), or it serves
 *  with the log it loaded (the "storage loaded" line's last index) */
export interface DamagedStart {
  exit: { code: number | null; signal: string | null; line: string | null } | null;
  loadedLastIndex: number | null;
  dataDir: string;
  ms: number;
}

export interface ActiveFault {
  variant: Variant;
  detail: string;
  /** the fault found the system misbehaving (the run is not VALID) */
  problem?: string;
  /** a node's clock ran at this rate during the fault (the lease checkers' margin) */
  clock?: { node: string; rate: number };
  /** acknowledged before this time means durable: the durability checker's crash point */
  durableBefore?: number;
  /** undo it (restart, resume, heal) */
  heal(): Promise<void>;
}

export const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(0, xs.length)]!;

export async function leaderOrAny(env: NemesisEnv, rng: Rng): Promise<string> {
  return (await env.leader()) ?? pick(rng, env.nodes);
}

export type Injected = ActiveFault & { holdMs: number };

/** Start one fault. Returns how to heal it; the caller holds it for `holdMs` first. */
export async function inject(v: Variant, env: NemesisEnv, rng: Rng): Promise<Injected> {
  if ((MEMBERSHIP_VARIANTS as readonly string[]).includes(v)) return injectMembership(v as MembershipVariant, env, rng);
  if ((CORRUPT_VARIANTS as readonly string[]).includes(v)) return injectCorrupt(v as CorruptVariant, env, rng);
  if ((CLOCK_VARIANTS as readonly string[]).includes(v)) return injectClock(v as ClockVariant, env, rng);
  const n = env.nodes.length;
  const minority = Math.floor((n - 1) / 2);
  const pauseMs = env.ttlMs + rng.int(800, 1800); // longer than the session TTL
  const hold = (): number => rng.int(2500, 4500);
  const others = (x: string): string[] => env.nodes.filter((y) => y !== x);
  switch (v) {
    case 'partition-leader': {
      const l = await leaderOrAny(env, rng);
      await env.split([l], others(l));
      return { variant: v, detail: `isolated ${l}`, holdMs: hold(), heal: () => env.healPartitions() };
    }
    case 'partition-halves': {
      const sh = shuffle(rng, env.nodes);
      const a = sh.slice(0, rng.int(1, minority + 1));
      const b = sh.slice(a.length);
      await env.split(a, b);
      return { variant: v, detail: `${a.join(',')} | ${b.join(',')}`, holdMs: hold(), heal: () => env.healPartitions() };
    }
    case 'partition-ring': {
      // node i keeps links to i±1 only (a majority of 3 out of 5 including itself)
      const sh = shuffle(rng, env.nodes);
      const cuts: string[] = [];
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          const d = Math.min(j - i, n - (j - i));
          if (d > 1) {
            await env.split([sh[i]!], [sh[j]!]);
            cuts.push(`${sh[i]}-${sh[j]}`);
          }
        }
      }
      return { variant: v, detail: `ring ${sh.join('→')} (cut ${cuts.join(' ')})`, holdMs: hold(), heal: () => env.healPartitions() };
    }
    case 'partition-bridge': {
      const sh = shuffle(rng, env.nodes);
      const bridge = sh[0]!;
      const half = Math.floor((n - 1) / 2);
      const a = sh.slice(1, 1 + half);
      const b = sh.slice(1 + half);
      await env.split(a, b);
      return { variant: v, detail: `${a.join(',')} | ${b.join(',')} bridged by ${bridge}`, holdMs: hold(), heal: () => env.healPartitions() };
    }
    case 'partition-oneway': {
      const x = rng.next() < 0.5 ? await leaderOrAny(env, rng) : pick(rng, env.nodes);
      for (const y of others(x)) await env.cut(y, x);
      return { variant: v, detail: `${x} receives nothing from ${others(x).join(',')} (but sends)`, holdMs: hold(), heal: () => env.healPartitions() };
    }
    case 'partition-partial': {
      const l = await leaderOrAny(env, rng);
      const b = pick(rng, others(l));
      await env.split([l], [b]);
      return { variant: v, detail: `${l} x ${b}; both still see ${env.nodes.filter((y) => y !== l && y !== b).join(',')}`, holdMs: hold(), heal: () => env.healPartitions() };
    }
    case 'kill-one':
    case 'kill-leader':
    case 'kill-minority':
    case 'kill-all':
    case 'unsynced': {
      let ids: string[];
      if (v === 'kill-one') ids = [pick(rng, env.nodes)];
      else if (v === 'kill-leader') ids = [await leaderOrAny(env, rng)];
      else if (v === 'kill-minority') ids = shuffle(rng, env.nodes).slice(0, Math.max(1, minority));
      else if (v === 'kill-all') ids = [...env.nodes];
      else {
        const l = await leaderOrAny(env, rng);
        ids = [l, ...shuffle(rng, others(l)).slice(0, minority)];
      }
      await env.kill(ids);
      const detail = v === 'unsynced' ? `kill -9 ${ids.join(',')} (a majority), dropping their unsynced writes` : `kill -9 ${ids.join(',')}`;
      return { variant: v, detail, holdMs: rng.int(1000, 3000), heal: () => env.restart(ids) };
    }
    case 'pause-leader':
    case 'pause-follower': {
      const l = await env.leader();
      const id = v === 'pause-leader' ? l ?? pick(rng, env.nodes) : pick(rng, env.nodes.filter((x) => x !== l));
      env.pauseNode(id);
      return { variant: v, detail: `SIGSTOP ${id}${id === l ? ' (leader)' : ''} for ${pauseMs} ms`, holdMs: pauseMs, heal: async () => env.resumeNode(id) };
    }
    case 'transfer-leader': {
      // A leader change with no process stopped and no link cut: the old leader steps down
      // with requests in flight (queued acquires proposed, not yet applied by the next
      // leader), so the next leader must learn of their waits from the log (docs/api.md
      // "Waits"). Short (a transfer takes one election), so the checkers' fault windows stay
      // small; twice, 0.3–0.8 s apart, to catch the proposals of a fresh leader too.
      const answers: string[] = [];
      for (let i = 0; i < 2; i++) {
        if (i > 0) await env.sleep(rng.int(300, 800));
        answers.push(await env.transferLeadership(undefined));
      }
      return { variant: v, detail: `transfer-leadership twice: ${answers.join('; ')}`, holdMs: rng.int(100, 300), heal: async () => {} };
    }
    case 'pause-client': {
      const c = await env.pickHolder(3000);
      env.pauseClient(c);
      return { variant: v, detail: `SIGSTOP client ${c} for ${pauseMs} ms`, holdMs: pauseMs, heal: async () => env.resumeClient(c) };
    }
    case 'member-replace-leader':
    case 'member-replace-follower': {
      const l = await env.leader();
      const id = v === 'member-replace-leader' ? l ?? pick(rng, env.nodes) : pick(rng, env.nodes.filter((x) => x !== l));
      await env.removeMember(id);
      return {
        variant: v,
        detail: `removed ${id}${id === l ? ' (leader)' : ''} from the cluster and stopped it; a new node joins in its place`,
        holdMs: rng.int(1000, 3000),
        heal: async () => void (await env.addMember(id)),
      };
    }
    case 'wipe-restart': {
      const id = pick(rng, env.nodes);
      const sameId = rng.next() < 0.5;
      const r = await env.wipeAndRestart(id);
      const refused = r.code === 2 && r.line !== null;
      return {
        variant: v,
        detail: refused
          ? `wiped ${id}'s data directory and restarted it: it refused in ${r.ms} ms (exit 2: ${r.line!.slice(0, 120)}…); remove → join${sameId ? ` as ${id} again` : ''}`
          : `wiped ${id}'s data directory and restarted it: it did NOT refuse (exit ${r.code}, line ${r.line === null ? 'missing' : 'present'})`,
        holdMs: rng.int(500, 1500),
        // the documented recovery; the same id again half the time (docs/membership.md allows it)
        heal: async () => {
          if (sameId) return env.rebuild(id);
          await env.removeMember(id);
          await env.addMember(id);
        },
        ...(refused ? {} : { problem: `wipe: ${id} restarted on an empty data directory did not refuse to start (exit ${r.code})` }),
      };
    }
    case 'member-failover-leader': {
      const l = await leaderOrAny(env, rng);
      const back = rng.int(200, 1500);
      await env.kill([l]);
      const removal = env.removeMember(l);
      await env.sleep(back);
      // unless the removal already went through (then it stays dead, as an operator would leave it)
      const restarted = env.nodes.includes(l) ? env.restart([l]) : Promise.resolve();
      await removal;
      await restarted;
      return {
        variant: v,
        detail: `kill -9 ${l} (leader), DELETE ${l} at once through a follower, restarted ${l} after ${back} ms; removed and stopped`,
        holdMs: rng.int(1000, 3000),
        heal: async () => {
          const l2 = await env.leader();
          if (l2 === null) {
            await env.addMember(l);
            return;
          }
          const back2 = rng.int(200, 1500);
          await env.kill([l2]);
          const join = env.addMember(l);
          await env.sleep(back2);
          await env.restart([l2]);
          await join;
        },
      };
    }
    case 'revoke-leader': {
      const d = await env.revokeLeader();
      return { variant: v, detail: d, holdMs: rng.int(200, 600), heal: async () => undefined };
    }
    case 'revoke-lock':
    case 'revoke-semaphore': {
      const d = await env.revokeGrants(v === 'revoke-lock' ? 'lock' : 'semaphore');
      return { variant: v, detail: d, holdMs: rng.int(200, 600), heal: async () => undefined };
    }
    case 'packet': {
      const d = await env.startPacket();
      return { variant: v, detail: d, holdMs: rng.int(3000, 5000), heal: () => env.stopPacket() };
    }
    default:
      throw new Error(`nemesis: no injection for ${v}`);
  }
}
