// SimCluster: N × {RawNode + MemoryDurableStorage + toy app} over one SimNetwork, advanced
// one tick at a time in a fixed order (architecture.md "Deterministic simulation"):
//   deliver due packets in (from, to) order → tick nodes in id order → drain every node's
//   Ready loop → [the workload acts, then drains again] → checkers.
// It owns node lifecycles: bootstrap, crash (optionally in the middle of a Ready), restart
// from the node's own disk, join (a fresh learner), and decommission after removal.
import type { Entry, Message, NodeId } from '../../../src/raft/core/types.js';
import type { Rng } from '../../../src/raft/core/rng.js';
import { decodeConfChange } from '../../../src/raft/core/conf.js';
import { Checkers, type NodeSnapshot } from '../../checkers/raft/safety.js';
import { MemoryDurableStorage } from '../../../src/raft/storage/memory-durable-storage.js';
import { SimNode, type CrashPoint, type DriverEnv } from './driver.js';
import { SimNetwork, type NetEvent } from '../network.js';
import type { SimOptions } from '../options.js';
import { inIdOrder } from '../../support/id-order.js';

export const MAX_NODE_IDS = 8;

export class SimCluster {
  now = 0;
  readonly checkers = new Checkers();
  readonly network: SimNetwork;
  /** every node id ever created, in creation (= id) order */
  readonly ids: NodeId[] = [];
  private readonly running = new Map<NodeId, SimNode>();
  /** runningNodes() in id order, rebuilt only after a node starts, stops or joins: it is
   *  asked for several times per tick, and rebuilding it each time was ~10% of a sweep */
  private runningList: readonly SimNode[] | null = null;
  private readonly disks = new Map<NodeId, MemoryDurableStorage>();
  private readonly incarnations = new Map<NodeId, number>();
  /** crashed nodes and the tick they come back (Infinity: never, e.g. decommissioned) */
  readonly downUntil = new Map<NodeId, number>();
  /** removed from the membership and shut down for good; their ids are never reused */
  readonly decommissioned = new Set<NodeId>();
  private readonly toDecommission = new Set<NodeId>();
  readonly stats = { crashes: 0, midReadyCrashes: 0, restarts: 0, compactions: 0, joins: 0, removals: 0, wipes: 0, coverHeartbeats: 0, leaderStalls: 0, leaderStallsDeposed: 0, leaderStallTicksMax: 0 };
  /** disks made per node id: each gets its own incarnation */
  private readonly diskCount = new Map<NodeId, number>();
  private readonly env: DriverEnv;
  private readonly initialVoters: NodeId[];

  constructor(readonly opts: SimOptions, private readonly rng: { core: Rng; disk: Rng; net: Rng }, trace?: (line: string) => void) {
    this.network = new SimNetwork(opts.network, rng.net);
    this.env = {
      checkers: this.checkers,
      now: () => this.now,
      onCoverHeartbeats: (n: number) => {
        this.stats.coverHeartbeats += n;
      },
      onLeaderStall: (ticks: number, deposed: boolean) => {
        this.stats.leaderStalls++;
        if (deposed) this.stats.leaderStallsDeposed++;
        else this.stats.leaderStallTicksMax = Math.max(this.stats.leaderStallTicksMax, ticks);
      },
      send: (m: Message, inc: number) => this.network.send(m, this.now, inc),
      onConfApplied: (_node: NodeId, e: Entry) => this.onConfApplied(e),
      ...(trace ? { trace: (line: string) => trace(`[${this.now}] ${line}`) } : {}),
    };
    this.initialVoters = Array.from({ length: opts.nodeCount }, (_, k) => `n${k + 1}`);
    for (const id of this.initialVoters) this.create(id);
  }

  /** a new node: its disk holds only the bootstrap configuration (the initial voters), as
   *  every node's cluster file does; a joiner learns later changes from the log or a snapshot */
  private create(id: NodeId): SimNode {
    this.ids.push(id);
    this.runningList = null;
    this.network.addNode(id);
    this.disks.set(id, this.blankDisk(id));
    this.incarnations.set(id, 0);
    return this.start(id);
  }

  /** a data directory as a node makes it on first start: the seed configuration (the
   *  cluster file), nothing else, and a new incarnation */
  private blankDisk(id: NodeId): MemoryDurableStorage {
    const k = (this.diskCount.get(id) ?? 0) + 1;
    this.diskCount.set(id, k);
    return new MemoryDurableStorage({ voters: [...this.initialVoters], learners: [] }, { rng: this.rng.disk.fork(), diskId: `${id}#${k}` });
  }

  /** amnesia: the node's disk is lost entirely; it restarts at once on a blank one under
   *  the same id (what a node started on an empty data directory without --join does) */
  wipe(id: NodeId): void {
    const node = this.running.get(id);
    if (!node) return;
    this.running.delete(id);
    this.runningList = null;
    this.checkers.dropReads(id);
    this.disks.set(id, this.blankDisk(id));
    this.stats.wipes++;
    this.start(id);
  }

  /** a lying disk: the node crashes, and its disk keeps only the log up to `keep` although
   *  the node had acknowledged more (MemoryDurableStorage.loseTail); it restarts at once on
   *  that disk */
  loseTail(id: NodeId, keep: number): void {
    const node = this.running.get(id);
    if (!node) return;
    const last = node.disk.lastIndex();
    this.kill(node, this.now);
    this.disks.get(id)!.loseTail(keep);
    this.env.trace?.(`${id}: disk lost entries ${keep + 1}..${last} it had acknowledged; restarted`);
    this.start(id);
  }

  private start(id: NodeId): SimNode {
    const inc = this.incarnations.get(id)! + 1;
    this.incarnations.set(id, inc);
    const node = new SimNode(id, inc, this.disks.get(id)!, this.opts, this.rng.core.fork(), this.env);
    this.running.set(id, node);
    this.runningList = null;
    this.downUntil.delete(id);
    return node;
  }

  join(): NodeId | null {
    if (this.ids.length >= MAX_NODE_IDS) return null;
    const id = `n${this.ids.length + 1}`;
    this.create(id);
    this.stats.joins++;
    return id;
  }

  node(id: NodeId): SimNode | undefined {
    return this.running.get(id);
  }
  runningNodes(): readonly SimNode[] {
    this.runningList ??= inIdOrder(this.ids, this.running);
    return this.runningList;
  }
  incarnation(id: NodeId): number | null {
    return this.running.get(id)?.incarnation ?? null;
  }

  /** the running leader with the highest term, if any */
  leader(): SimNode | null {
    let best: SimNode | null = null, bestTerm = -1;
    for (const n of this.runningNodes()) {
      const st = n.raw.status();
      if (st.role === 'leader' && st.term > bestTerm) { best = n; bestTerm = st.term; }
    }
    return best;
  }

  crash(id: NodeId, downTicks: number, point: CrashPoint | null = null): void {
    const node = this.running.get(id);
    if (!node) return;
    if (point !== null) {
      node.crashPoint = point; // strikes inside the node's next Ready (see drainAll)
      this.downUntil.set(id, this.now + downTicks);
      return;
    }
    this.kill(node, this.now + downTicks);
  }

  private kill(node: SimNode, until: number): void {
    this.running.delete(node.id);
    this.runningList = null;
    this.disks.get(node.id)!.crash(this.opts.crash.loseUnsynced);
    this.checkers.dropReads(node.id);
    this.downUntil.set(node.id, until);
    this.stats.crashes++;
  }

  /** the liveness phase: every node runs, no crash stays armed */
  reviveAll(): void {
    for (const n of this.running.values()) n.crashPoint = null;
    this.restartDue(true);
  }

  restartDue(all = false): void {
    for (const [id, until] of this.downUntil) {
      if (this.decommissioned.has(id) || this.running.has(id)) continue;
      if (all || until <= this.now) {
        this.start(id);
        this.stats.restarts++;
      }
    }
  }

  private onConfApplied(e: Entry): void {
    const cc = decodeConfChange(e.data);
    // a removed server is shut down once its removal commits (what an operator does; a
    // removed server left running could only disrupt, thesis §4.2.3)
    if (cc.type === 'removeNode' && !this.decommissioned.has(cc.nodeId)) this.toDecommission.add(cc.nodeId);
  }

  private deliver(ev: NetEvent): void {
    if (ev.kind === 'message') {
      const refused = this.running.get(ev.msg.to)?.receive(ev.msg) ?? null;
      // every node here is correct, so the core's trust boundary (RawNode.step) must never
      // refuse one of their messages: a refusal is a bug in the boundary or the sender
      if (refused !== null) throw new Error(`RawNode.step refused a message from a correct node (${refused.reason}: ${refused.detail})`);
      return;
    }
    const node = this.running.get(ev.node);
    if (!node || node.incarnation !== ev.inc) return;
    if (ev.kind === 'unreachable') node.reportUnreachable(ev.peer);
    else node.reportSnapshot(ev.peer, ev.ok);
  }

  /** deliver → tick → drain; the workload acts after this, then call endTick() */
  beginTick(): void {
    this.now++;
    this.restartDue();
    this.network.deliverDue(this.now, this, (ev) => this.deliver(ev));
    for (const n of this.runningNodes()) n.tick();
    this.drainAll();
  }

  drainAll(): void {
    for (const n of this.runningNodes()) {
      if (!n.drain()) {
        this.stats.midReadyCrashes++;
        this.kill(n, this.downUntil.get(n.id) ?? this.now + 1);
      }
    }
    for (const id of this.toDecommission) {
      const n = this.running.get(id);
      if (n) {
        this.running.delete(id);
        this.runningList = null;
        this.checkers.dropReads(id);
      }
      this.decommissioned.add(id);
      this.downUntil.set(id, Infinity);
      this.stats.removals++;
    }
    this.toDecommission.clear();
  }

  /** drain once more (the workload's proposals), then run the per-tick checkers */
  endTick(): void {
    this.drainAll();
    const snaps: NodeSnapshot[] = [];
    for (const n of this.runningNodes()) {
      const st = n.raw.status();
      snaps.push({ id: n.id, incarnation: n.incarnation, disk: n.disk.diskId, role: st.role, term: st.term, log: n.disk, durable: n.disk.durable });
    }
    this.checkers.afterTick(snaps);
  }

  compact(id: NodeId): void {
    if (this.running.get(id)?.compact()) this.stats.compactions++;
  }
}
