// The `clock` faults: one node's clock runs fast or slow, or its wall clock steps
// (clock.ts has the libfaketime machinery). README "Guarantees" states the margin they are
// measured against:
//
// Only the leader's monotonic clock enters a lease: its lessor measures each session's TTL
// from the arrival of the renewal (src/lock-fsm/lessor.ts `renew`), and log time (max hold,
// Idempotency-Key ageing) advances by what it measures (docs/lock-fsm.md "Log time"). A
// leader clock running at rate r < 1 expires sessions late (ttl / r), never early. At
// r > 1 it frees a session ttl / r after the renewal arrived: earlier than the contract's
// "never sooner than ttl after the client sent it". The SDK trusts a lease only until
// sentAt + ttl − safetyMargin (ttl / 10 by default, at most 2 s: packages/client
// session.ts), so its users are safe while ttl / r ≥ ttl − margin, i.e. r ≤
// ttl / (ttl − margin) = 1.11 with the default margin: the SAFETY MARGIN. Beyond it a
// client paused across the difference acts on an expired lease, and only fencing keeps the
// resource safe. Followers' clocks time elections only; no guarantee reads a wall clock.
//
// Variants (rate r on the target node, from the first second of the hold to the heal):
// - clock-fast-leader (r = 2), clock-slow-leader (r = 0.5), clock-drift-leader (r = 1.05,
//   inside the margin): and while it runs, a holder is paused for 0.75 TTL — long enough
//   to lose its lock to a leader at r = 2 (ttl / 2), too short for any leader inside the
//   margin. The lease checkers allow the fast leader's early expiries (reported as
//   expected beyond the margin); fencing must hold whatever the clocks do.
// - clock-fast-follower (r = 2), clock-slow-follower (r = 0.5): a follower's timers (its
//   election timeout, its vote lease) run fast or slow.
// - clock-step: the wall clock of a node (the leader or a follower) steps forward 10 minutes,
//   then back 20, then forward again at the heal. Its process restarts first (kill -9) with
//   only the wall clock faked: a monotonic clock never steps. Nothing may change: no
//   guarantee reads a wall clock.
import type { Rng } from '../../src/raft/core/rng.js';
import { defaultSafetyMarginMs } from '@raftlock/client';
import { pick, type Injected, type NemesisEnv } from './nemesis.js';

export const CLOCK_VARIANTS = ['clock-fast-leader', 'clock-slow-leader', 'clock-drift-leader', 'clock-fast-follower', 'clock-slow-follower', 'clock-step'] as const;
export type ClockVariant = (typeof CLOCK_VARIANTS)[number];

const RATE: Record<Exclude<ClockVariant, 'clock-step'>, number> = {
  'clock-fast-leader': 2,
  'clock-slow-leader': 0.5,
  'clock-drift-leader': 1.05,
  'clock-fast-follower': 2,
  'clock-slow-follower': 0.5,
};

/** the client's safety margin and the fastest leader clock it covers (see the header) */
export function clockMargin(ttlMs: number): { marginMs: number; maxRate: number } {
  const marginMs = defaultSafetyMarginMs(ttlMs);
  return { marginMs, maxRate: ttlMs / (ttlMs - marginMs) };
}

/** libfaketime reads its control file again at most once a second */
const TAKES_EFFECT_MS = 1200;

export async function injectClock(v: ClockVariant, env: NemesisEnv, rng: Rng): Promise<Injected> {
  if (v === 'clock-step') return step(env, rng);
  const rate = RATE[v];
  const l = await env.leader();
  const onLeader = v.endsWith('-leader');
  const rateNodes = env.nodes.filter((x) => env.clockMode(x) === 'rate');
  if (rateNodes.length === 0) throw new Error('no node keeps a fake clock in rate mode');
  // a node whose process keeps only a fake wall clock (since a step) cannot run fast or
  // slow: another follower then, or any node that can
  const followers = rateNodes.filter((x) => x !== l);
  const wanted = onLeader ? l : pick(rng, followers.length ? followers : env.nodes.filter((x) => x !== l));
  const target = wanted !== null && rateNodes.includes(wanted) ? wanted : pick(rng, rateNodes);
  const note = target === wanted ? '' : ` (${wanted ?? 'no leader'} keeps only a fake wall clock since a step: ${target} instead)`;
  env.setClock(target, `+0 x${rate}`);
  let paused = '';
  if (onLeader) {
    await env.sleep(TAKES_EFFECT_MS);
    const c = await env.pickHolder(3000);
    const ms = Math.round(0.75 * env.ttlMs);
    env.pauseClient(c);
    await env.sleep(ms);
    env.resumeClient(c);
    paused = `; client ${c} paused ${ms} ms (0.75 TTL) meanwhile`;
  }
  return {
    variant: v,
    detail: `${target}${target === l ? ' (leader)' : ''} clock at ×${rate}${note}${paused}`,
    clock: { node: target, rate },
    holdMs: rng.int(2500, 4500),
    heal: async () => {
      env.setClock(target, '+0 x1');
      await env.sleep(TAKES_EFFECT_MS);
    },
  };
}

async function step(env: NemesisEnv, rng: Rng): Promise<Injected> {
  const l = await env.leader();
  const target = rng.next() < 0.5 && l !== null ? l : pick(rng, env.nodes.filter((x) => x !== l));
  const restarted = env.clockMode(target) !== 'wall';
  if (restarted) await env.restartWallClock(target);
  env.setClock(target, '+600');
  await env.sleep(rng.int(1500, 3000));
  env.setClock(target, '-600');
  return {
    variant: 'clock-step',
    detail: `${target}${target === l ? ' (leader)' : ''}${restarted ? ' restarted with a fake wall clock (kill -9),' : ''} wall clock stepped +10 min, then −20 min, +10 min at the heal (its monotonic clock untouched)`,
    holdMs: rng.int(1500, 3000),
    heal: async () => {
      env.setClock(target, '+0');
      await env.sleep(TAKES_EFFECT_MS);
    },
  };
}
