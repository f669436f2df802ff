// Cluster operations behind the REST API (docs/contract.md §3 "Operations", docs/membership.md):
// GET /v1/cluster, adding/promoting/removing members, and leadership transfer. The lock
// service delegates here; membership changes themselves are in membership.ts. Both answer
// a Result (docs/architecture.md "Services answer a Result").
import type { ClusterView, MemberView, RequestContext } from '../../api/service.js';
import { Failure } from '../../api/failure.js';
import { ok, refused, type Refusal, type Result } from '../../api/service-result.js';
import type { NodeId } from '../../raft/core/types.js';
import type { RaftDriver } from '../../raft/driver.js';
import type { Membership } from './membership.js';

export interface ClusterOpsDeps {
  nodeId: NodeId;
  clusterName: string;
  driver: RaftDriver;
  membership: Membership;
  /** longest election timeout: a transfer must finish within about one (thesis §3.10) */
  electionTimeoutMaxMs: number;
  /** budget of a follower's relay to the leader, beyond the leader's own time (forwarding) */
  relayMarginMs?: number;
  nowMs(): number;
  /** why this node is not ready, as /readyz says it (readiness.ts); shown as `not_ready` */
  notReadyReason?: () => string | null;
}

/** removeMember's refusal on a leader asked to remove itself, once it handed leadership
 *  over: the route relays the same request to the new leader (see routes/cluster.ts). */
export class LeadershipMovedError extends Failure {
  constructor(readonly leaderId: string) {
    super('unavailable', `leadership moved to ${leaderId}; retry there`);
  }
}

export class ClusterOps {
  constructor(private readonly d: ClusterOpsDeps) {}

  /** This node's view. Match index and lag of every member are known on the leader only. */
  view(): ClusterView {
    const st = this.d.driver.status();
    const learners = new Set(st.conf.learners);
    const self = this.d.nodeId;
    const role = st.role === 'leader' ? 'leader' : learners.has(self) ? 'learner' : st.role === 'follower' ? 'follower' : 'candidate';
    const members: MemberView[] = [...st.conf.voters, ...st.conf.learners].map((id) => {
      const addr = this.d.membership.address(id);
      const m: MemberView = { id, api: addr?.api ?? '', peer: addr?.peer ?? '' };
      m.role = learners.has(id) ? 'learner' : id === st.leader ? 'leader' : 'follower';
      // replicated, so every node can say it: will the leader promote this learner by itself?
      if (learners.has(id)) m.promotion_pending = this.d.membership.promotionPending(id);
      const pr = st.progress?.[id];
      if (pr) {
        m.match_index = pr.match;
        m.lag = Math.max(0, st.lastIndex - pr.match);
      }
      return m;
    });
    const notReady = this.d.notReadyReason?.() ?? null;
    return {
      cluster: this.d.clusterName,
      node_id: self,
      role,
      term: st.term,
      leader_id: st.leader,
      commit_index: st.commit,
      applied_index: this.d.driver.appliedIndex,
      members,
      ...(notReady !== null ? { not_ready: notReady } : {}),
    };
  }

  async add(m: { id: string; api: string; peer: string; learner?: boolean }, ctx: RequestContext): Promise<Result<ClusterView>> {
    const notLeader = this.notLeader();
    if (notLeader) return notLeader;
    if (ctx.signal.aborted) return refused(new Failure('unavailable', 'the request was aborted'));
    return this.viewAfter(await this.d.membership.add({ id: m.id, api: m.api, peer: m.peer }, { learnerOnly: m.learner === true }));
  }

  async promote(id: string, ctx: RequestContext): Promise<Result<ClusterView>> {
    const notLeader = this.notLeader();
    if (notLeader) return notLeader;
    return this.viewAfter(await this.d.membership.promote(id, ctx.signal));
  }

  /**
   * Remove a member. A leader asked to remove itself first hands leadership to the most
   * up-to-date follower (so the cluster does not wait out an election timeout after the
   * removal commits), then lets the new leader do the removal.
   */
  async remove(id: string, ctx: RequestContext): Promise<Result<ClusterView>> {
    const notLeader = this.notLeader();
    if (notLeader) return notLeader;
    if (id === this.d.nodeId) {
      const moved = await this.transfer(undefined, ctx);
      return moved.ok ? refused(new LeadershipMovedError(moved.value.leader_id)) : moved;
    }
    return this.viewAfter(await this.d.membership.remove(id));
  }

  /** Hand leadership over (thesis §3.10) and wait until the target leads. */
  async transfer(to: string | undefined, ctx: RequestContext): Promise<Result<{ leader_id: string }>> {
    const notLeader = this.notLeader();
    if (notLeader) return notLeader;
    const st = this.d.driver.status();
    if (to === this.d.nodeId) return ok({ leader_id: to });
    if (to !== undefined && !st.conf.voters.includes(to)) {
      return refused(new Failure('invalid_request', `to: ${to} is not a voting member${st.conf.learners.includes(to) ? ' (it is a learner: promote it first)' : ''}`));
    }
    const target = to ?? bestFollower(st.progress ?? {}, st.conf.voters, this.d.nodeId);
    if (!target) return refused(new Failure('unavailable', 'no other voting member to hand leadership to'));
    if (!(await this.d.driver.transferLeadership(target))) return refused(new Failure('unavailable', `leadership transfer to ${target} was refused (this node is no longer the leader?)`));
    const deadline = this.d.nowMs() + 2 * this.d.electionTimeoutMaxMs;
    while (this.d.nowMs() < deadline) {
      if (ctx.signal.aborted) return refused(new Failure('unavailable', 'the request was aborted'));
      if (this.d.driver.currentLeader === target) return ok({ leader_id: target });
      await new Promise((r) => setTimeout(r, 20));
    }
    const now = this.d.driver.currentLeader;
    return refused(new Failure('timeout', `leadership did not move to ${target} in time (leader now: ${now ?? 'unknown'}); check GET /v1/cluster`));
  }

  /**
   * The longest each operation may take on the leader before it answers. A follower's
   * relay waits this long plus a margin (routes/cluster.ts), so a change the leader
   * completes is never reported as "outcome unknown" by the follower that relayed it.
   */
  leaderBudgetMs(op: 'addMember' | 'promoteMember' | 'removeMember' | 'transferLeadership'): number {
    const transfer = 2 * this.d.electionTimeoutMaxMs + 1000;
    switch (op) {
      case 'addMember':
        return this.d.membership.addBudgetMs();
      case 'promoteMember':
        return this.d.membership.promoteBudgetMs();
      case 'transferLeadership':
        return transfer;
      case 'removeMember':
        // a leader removing itself hands over, then relays the removal to the new leader
        return transfer + (this.d.relayMarginMs ?? 5000) + this.d.membership.changeBudgetMs();
    }
  }

  /** this node's view once a change is made; its refusal as it is */
  private viewAfter(r: Result<void>): Result<ClusterView> {
    return r.ok ? ok(this.view()) : r;
  }

  private notLeader(): Refusal | null {
    return this.d.driver.currentRole === 'leader' ? null : refused(new Failure('unavailable', 'this node is not the leader'));
  }
}

/**
 * The voter other than `self` with the highest match index (the quickest to take over),
 * preferring those heard from since the last check-quorum tick. `recentActive` is cleared
 * for every follower at each such tick and set again by its next answer, so for a moment
 * once per election timeout none is "active": a transfer asked then still picks the most
 * caught-up voter instead of answering that there is none (the core refuses or the
 * transfer times out if that voter is really gone).
 */
export function bestFollower(progress: Record<string, { match: number; recentActive?: boolean }>, voters: readonly string[], self: string): string | null {
  const pick = (activeOnly: boolean): string | null => {
    let best: string | null = null;
    let bestMatch = -1;
    for (const id of voters) {
      const pr = progress[id];
      if (id === self || !pr || (activeOnly && pr.recentActive === false)) continue;
      if (pr.match > bestMatch) {
        best = id;
        bestMatch = pr.match;
      }
    }
    return best;
  };
  return pick(true) ?? pick(false);
}
