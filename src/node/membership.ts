// The member address book and membership changes (spec §3 Operations). Membership itself
// lives in the Raft log (single-server changes, thesis ch. 4); the URLs of each member ride
// in the conf change's context, are kept in the application state (and so in snapshots),
// and are handed to the transport.
import type { ConfChange, ConfState, NodeId } from '../raft/core/types.js';
import type { RaftDriver } from '../raft/node.js';
import type { Transport } from '../transport/transport.js';
import { ApiError } from '../api/errors.js';
import type { LockApp, MemberAddress } from './lock-app.js';

export interface MembershipOptions {
  self: NodeId;
  app: LockApp;
  driver: () => RaftDriver;
  transport: Transport;
  /** a learner is promoted once its match index is within this many entries of the leader's log */
  promoteLagEntries: number;
  /** how long to wait for a learner to catch up before giving up */
  catchUpTimeoutMs: number;
  nowMs(): number;
}

const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

export function encodeAddressContext(m: MemberAddress): Uint8Array {
  return enc.encode(JSON.stringify({ api: m.api, peer: m.peer }));
}

function decodeAddressContext(id: string, ctx: Uint8Array | undefined): MemberAddress | null {
  if (!ctx || ctx.length === 0) return null;
  try {
    const v = JSON.parse(dec.decode(ctx)) as { api?: unknown; peer?: unknown };
    if (typeof v.api === 'string' && typeof v.peer === 'string') return { id, api: v.api, peer: v.peer };
  } catch {
    /* not an address context */
  }
  return null;
}

export class Membership {
  private changing = false;

  constructor(private readonly o: MembershipOptions) {}

  address(id: NodeId): MemberAddress | undefined {
    return this.o.app.members.get(id);
  }

  /** seed addresses (from the cluster file) that the log does not carry */
  seed(members: readonly MemberAddress[]): void {
    for (const m of members) if (!this.o.app.members.has(m.id)) this.o.app.members.set(m.id, m);
    this.pushPeers();
  }

  /** driver hook: a conf change entry was applied */
  onConfApplied(_conf: ConfState, cc: ConfChange): void {
    const addr = decodeAddressContext(cc.nodeId, cc.context);
    if (addr) this.o.app.members.set(cc.nodeId, addr);
    this.pushPeers();
  }

  /** after a snapshot replaced the application state (and its address book) */
  onRestored(): void {
    this.pushPeers();
  }

  pushPeers(): void {
    this.o.transport.setPeers(new Map([...this.o.app.members.values()].map((m) => [m.id, m.peer])));
  }

  /** add a node: as a learner first, promoted to voter once caught up (etcd's learner flow) */
  async add(m: MemberAddress, signal: AbortSignal): Promise<void> {
    const driver = this.o.driver();
    const st = driver.status();
    if (st.conf.voters.includes(m.id)) throw new ApiError('conflict', `${m.id} is already a voting member`);
    await this.exclusive(async () => {
      // the leader must reach the new node as soon as the entry is appended
      this.o.app.members.set(m.id, m);
      this.pushPeers();
      if (!st.conf.learners.includes(m.id)) await this.change({ type: 'addLearner', nodeId: m.id, context: encodeAddressContext(m) });
      await this.waitCaughtUp(m.id, signal);
      await this.change({ type: 'addVoter', nodeId: m.id, context: encodeAddressContext(m) });
    });
  }

  async remove(id: NodeId, _signal: AbortSignal): Promise<void> {
    const st = this.o.driver().status();
    if (!st.conf.voters.includes(id) && !st.conf.learners.includes(id)) throw new ApiError('not_found', `${id} is not a member`);
    if (st.conf.voters.length === 1 && st.conf.voters[0] === id) throw new ApiError('invalid_request', 'id: cannot remove the last voting member');
    await this.exclusive(() => this.change({ type: 'removeNode', nodeId: id }));
  }

  private async exclusive(fn: () => Promise<void>): Promise<void> {
    if (this.changing) throw new ApiError('conflict', 'another membership change is in progress; one change at a time');
    this.changing = true;
    try {
      await fn();
    } finally {
      this.changing = false;
    }
  }

  private async change(cc: ConfChange): Promise<void> {
    const out = await this.o.driver().proposeConfChange(cc);
    if (out.ok) return;
    if (out.kind === 'rejected' && out.reason === 'conf_change_pending') throw new ApiError('conflict', 'a membership change is still being committed; one change at a time');
    if (out.kind === 'unknown') throw new ApiError('timeout', `the ${cc.type} of ${cc.nodeId} is not known to be committed; check GET /v1/cluster`);
    throw new ApiError('unavailable', `the ${cc.type} of ${cc.nodeId} was not applied (${out.kind === 'rejected' ? out.reason : out.kind})`);
  }

  private async waitCaughtUp(id: NodeId, signal: AbortSignal): Promise<void> {
    const deadline = this.o.nowMs() + this.o.catchUpTimeoutMs;
    while (this.o.nowMs() < deadline) {
      if (signal.aborted) throw new ApiError('unavailable', 'the request was aborted');
      const st = this.o.driver().status();
      if (st.role !== 'leader') throw new ApiError('unavailable', 'leadership moved during the membership change');
      const pr = st.progress?.[id];
      if (pr && st.lastIndex - pr.match <= this.o.promoteLagEntries && pr.match > 0) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new ApiError('timeout', `${id} did not catch up within ${this.o.catchUpTimeoutMs} ms; it stays a learner`);
  }
}
