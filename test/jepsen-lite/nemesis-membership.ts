// The membership faults beyond replacing a member (nemesis.ts has member-replace-* and
// member-failover-leader): docs/membership.md is the contract each one holds the cluster to.
//
// - member-reuse-id: remove a voter, then a node with an EMPTY data dir joins under the
//   same id in its slot ("The same id may be reused"). The old incarnation's grants and
//   acknowledgements must never count for the new one (docs/membership.md "Incarnations").
// - member-remove-while-down: kill -9 ⌊(n−1)/2⌋ followers and at once DELETE another
//   follower: without it the rest would lack a quorum (3 nodes: 1 up of 2; 5 nodes: 2 up
//   of 4), so the leader must refuse (409, "Strict reconfiguration check"). If it accepts,
//   the heal must still find a quorum path: the killed nodes restart, a leader is elected
//   and the removed node is replaced (a run that cannot get there is a violation).
// - member-grow: 3 → 4 → 3, 5 → 6 → 5. A new id in the run's spare network slot, added
//   etcd's way ("Add it, then start it"): `POST /v1/cluster/members`, then `serve
//   --config --node` on an empty data dir; it must become a voter, and the heal removes it
//   again.
// - member-transfer-during-change: DELETE a follower and, while that change is in flight,
//   move leadership to another follower (`POST /v1/cluster/transfer-leadership`); the
//   heal joins a replacement. Both requests must end (any answer; the removal is retried
//   until the configuration no longer lists the node).
import type { Rng } from '../../src/raft/core/rng.js';
import { pick, shuffle, type Injected, type NemesisEnv } from './nemesis.js';

export const MEMBERSHIP_VARIANTS = ['member-reuse-id', 'member-remove-while-down', 'member-grow', 'member-transfer-during-change'] as const;
export type MembershipVariant = (typeof MEMBERSHIP_VARIANTS)[number];

export async function injectMembership(v: MembershipVariant, env: NemesisEnv, rng: Rng): Promise<Injected> {
  switch (v) {
    case 'member-reuse-id': {
      const l = await env.leader();
      const followers = env.nodes.filter((x) => x !== l);
      const id = rng.next() < 0.5 && l !== null ? l : pick(rng, followers.length ? followers : env.nodes);
      await env.removeMember(id);
      return {
        variant: v,
        detail: `removed ${id}${id === l ? ' (leader)' : ''} and stopped it; a node with an empty data dir joins as ${id} again`,
        holdMs: rng.int(1000, 2500),
        heal: async () => void (await env.addMember(id, { sameId: true })),
      };
    }
    case 'member-remove-while-down':
      return removeWhileDown(env, rng);
    case 'member-grow': {
      const before = env.nodes.length;
      const { id, grew } = await env.growMember();
      if (!grew) return { variant: v, detail: `member add ${id}, then serve --config --node ${id} on an empty data dir in the spare slot: it did not become a voter (removed again)`, holdMs: 500, heal: async () => undefined };
      return {
        variant: v,
        detail: `grew ${before} → ${before + 1}: member add ${id}, then serve --config --node ${id} on an empty data dir in the spare slot; ${before + 1} → ${before} at the heal`,
        holdMs: rng.int(2000, 4000),
        heal: () => env.removeMember(id),
      };
    }
    case 'member-transfer-during-change': {
      const l = await env.leader();
      const followers = env.nodes.filter((x) => x !== l);
      if (l === null || followers.length < 2) throw new Error(`no leader with two followers (leader ${l ?? 'none'}, ${env.nodes.join(',')})`);
      const [target, to] = shuffle(rng, followers) as [string, string];
      const removal = env.removeMember(target).then(
        () => 'done',
        (err: unknown) => `failed: ${(err as Error).message}`,
      );
      await env.sleep(rng.int(0, 150));
      const transfer = await env.transferLeadership(to);
      const removed = await removal;
      if (removed !== 'done') env.problem(`member-transfer-during-change: the removal of ${target} while leadership moved to ${to} did not complete: ${removed}`);
      return {
        variant: v,
        detail: `DELETE ${target} (leader ${l}) and, while it ran, transfer leadership to ${to}: transfer → ${transfer}; removal ${removed}; a new node joins in ${target}'s slot`,
        holdMs: rng.int(1000, 2500),
        heal: async () => {
          if (removed === 'done') await env.addMember(target);
        },
      };
    }
  }
}

async function removeWhileDown(env: NemesisEnv, rng: Rng): Promise<Injected> {
  const v = 'member-remove-while-down';
  const n = env.nodes.length;
  const l = await env.leader();
  const followers = shuffle(rng, env.nodes.filter((x) => x !== l));
  const k = Math.floor((n - 1) / 2);
  if (l === null || followers.length < k + 1) throw new Error(`needs a leader and ${k + 1} followers (leader ${l ?? 'none'})`);
  const down = followers.slice(0, k);
  const target = followers[k]!;
  await env.kill(down);
  // at once: the leader heard from the killed nodes a moment ago
  const a = await env.deleteOnce(target);
  let outcome: 'refused' | 'accepted' | 'unknown';
  if (a.status === 409) outcome = 'refused';
  else if (a.status === 200) outcome = 'accepted';
  else if (a.status === null || a.status === 503 || a.status === 504) outcome = 'unknown';
  else {
    env.problem(`${v}: DELETE ${target} while ${down.join(',')} ${k > 1 ? 'were' : 'was'} down answered ${a.status} ${a.text}`);
    outcome = 'unknown';
  }
  const up = n - 1 - k;
  const quorum = Math.floor((n - 1) / 2) + 1;
  return {
    variant: v,
    detail: `kill -9 ${down.join(',')}; DELETE ${target} at once (the rest would be ${up} up of ${n - 1}, quorum ${quorum}): ${a.status ?? 'no answer'} ${a.text.slice(0, 160)} → ${outcome}`,
    holdMs: rng.int(1000, 2500),
    heal: async () => {
      await env.restart(down);
      // accepted (or unknown): the configuration may lack the target; the cluster must find
      // a quorum path once the killed nodes are back, and the removed node is replaced
      let m: Map<string, string> | null = null;
      for (let i = 0; i < 100 && m === null; i++) {
        m = await env.members();
        if (m === null) await env.sleep(300);
      }
      if (m === null) {
        env.problem(`${v}: after ${target}'s removal was ${outcome} with ${down.join(',')} down, no leader 30 s after they restarted (no quorum path)`);
        return;
      }
      if (!m.has(target)) {
        // it went through: the process of the removed node still runs; stop it and replace it
        await env.removeMember(target);
        await env.addMember(target);
      }
    },
  };
}
