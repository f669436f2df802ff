// The simulator's node driver: one real RawNode over a SimDisk, with the toy app. It is
// synchronous (the simulated disk completes at once), small, and follows the Ready order
// written on types.ts `Ready` EXACTLY, so a test failure points at the core, not at it:
//   1. earlyMessages may go first   2. persist (one batch; fsync iff mustSync)
//   3. messages                     4. restore snapshot, apply committed, serve reads
//   5. advance
// Every message passes the DurableBeforeSend checker as it leaves.
import { RawNode } from '../../src/raft/core/raw-node.js';
import type { Entry, Message, NodeId, Ready, ReadState, TraceEvent } from '../../src/raft/core/types.js';
import type { Rng } from '../../src/raft/core/rng.js';
import { ToyApp } from './app.js';
import type { Checkers } from './checkers.js';
import type { SimDisk } from './disk.js';
import type { SimOptions } from './options.js';
import { mutatedRaftConfig } from './mutations.js';

/** where an armed crash strikes inside the next Ready */
export type CrashPoint = 'afterEarlyMessages' | 'afterPersist';

export interface DriverEnv {
  readonly checkers: Checkers;
  send(m: Message, incarnation: number): void;
  /** a conf entry was applied on this node */
  onConfApplied(node: NodeId, e: Entry): void;
  trace?(line: string): void;
}

export class SimNode {
  readonly raw: RawNode;
  readonly app: ToyApp;
  private readonly reads: ReadState[] = [];
  /** set by the nemesis: the next Ready stops at this point and the node dies */
  crashPoint: CrashPoint | null = null;

  constructor(
    readonly id: NodeId,
    readonly incarnation: number,
    readonly disk: SimDisk,
    opts: SimOptions,
    rng: Rng,
    private readonly env: DriverEnv,
  ) {
    this.app = new ToyApp(disk.snapshot());
    this.raw = new RawNode({
      id, rng,
      electionTicks: opts.electionTicks, heartbeatTicks: opts.heartbeatTicks,
      preVote: opts.preVote, checkQuorum: opts.checkQuorum,
      maxInflight: opts.maxInflight, maxMsgBytes: opts.maxMsgBytes, lazyCommit: opts.lazyCommit,
      incarnation: disk.diskId,
      applied: this.app.state.applied,
      trace: (e) => this.onTrace(e),
      onLogRegression: (follower, acked, hint) => this.env.trace?.(`${this.id} hears that ${follower}'s log went back: it had acknowledged ${acked}, now ends at ${hint}`),
      ...mutatedRaftConfig(opts.mutations),
    }, disk);
  }

  private onTrace(e: TraceEvent): void {
    this.env.checkers.onTrace(e, this.incarnation);
    // commits are too frequent to be worth a trace line; role changes and votes are what a
    // failing seed's story is made of
    if (this.env.trace && e.type !== 'commit') {
      const extra = e.type === 'voteGranted' ? ` to ${e.to}` : e.type === 'becomeFollower' ? ` leader ${e.leader}` : e.type === 'becomeCandidate' && e.preVote ? ' (pre-vote)' : '';
      this.env.trace(`${this.id} ${e.type} term ${e.term}${extra}`);
    }
  }

  /** run Ready iterations until the core is idle; false if an armed crash struck */
  drain(): boolean {
    for (let guard = 0; this.raw.hasReady(); guard++) {
      if (guard > 10_000) throw new Error(`${this.id}: Ready loop did not settle in 10000 iterations`);
      if (!this.handleReady(this.raw.ready())) return false;
    }
    return true;
  }

  private sendAll(msgs: readonly Message[]): void {
    for (const m of msgs) {
      if (m.from !== this.id) throw new Error(`${this.id} emitted a message from ${m.from}`);
      this.env.checkers.onSend(m, this.disk.durable, this.disk, this.disk.diskId);
      this.env.send(m, this.incarnation);
    }
  }

  private handleReady(rd: Ready): boolean {
    this.sendAll(rd.earlyMessages);
    if (this.crashPoint === 'afterEarlyMessages') return false;
    this.disk.saveSync({ hardState: rd.hardState, snapshot: rd.snapshot, entries: rd.entries }, { sync: rd.mustSync });
    this.env.checkers.onPersist(this.id, rd.entries, this.disk);
    if (this.crashPoint === 'afterPersist') return false;
    this.sendAll(rd.messages);
    if (rd.snapshot) {
      this.app.restore(rd.snapshot);
      this.env.checkers.onRestore(this.id, rd.snapshot.meta.index, this.app.state.digest);
    }
    for (const e of rd.committed) {
      this.app.apply(e);
      this.env.checkers.onApply(this.id, e, this.app.state.digest);
      if (e.kind === 'conf') this.env.onConfApplied(this.id, e);
    }
    this.reads.push(...rd.readStates);
    this.serveReads();
    this.raw.advance(rd);
    return true;
  }

  private serveReads(): void {
    const applied = this.app.state.applied;
    for (let k = 0; k < this.reads.length;) {
      const r = this.reads[k]!;
      if (r.index <= applied) {
        this.env.checkers.onReadServed(r.ctx, this.id, applied, this.app.state.digest);
        this.reads.splice(k, 1);
      } else {
        k++;
      }
    }
  }

  /** take an app snapshot at the applied index and compact the log through it */
  compact(): boolean {
    const applied = this.app.state.applied;
    if (applied <= this.disk.firstIndex() - 1) return false;
    const term = this.disk.term(applied);
    if (term === undefined) return false;
    this.disk.compactSync(this.app.snapshot(term));
    return true;
  }
}
