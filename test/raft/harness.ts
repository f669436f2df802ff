// A tiny in-process network for scenario tests of the Raft core (after etcd-io/raft's
// raft_test.go `network` and tikv/raft-rs harness/network.rs): N RawNodes over
// MemoryStorage, one FIFO message queue, and verbs to cut links, isolate nodes, drop
// messages by predicate and recover. stabilize() runs Ready loops following the
// persistence order of types.ts exactly: early messages, persist, messages, apply, advance.
import { RawNode } from '../../src/raft/core/raw-node.js';
import type { RaftConfig } from '../../src/raft/core/raft.js';
import { MemoryStorage } from '../../src/raft/core/storage.js';
import { seededRng } from '../../src/raft/core/rng.js';
import { describeMessage, describeReadyLines } from '../../src/raft/core/describe.js';
import type { ConfState, Entry, Message, NodeId, ReadState, Ready } from '../../src/raft/core/types.js';

/** Scripted schedules that start an election the moment a leader is gone (the paper's
 *  figures: `campaign()` with no election timeout passing first) meet the leader lease:
 *  the others heard from that leader a moment ago and ignore the candidate, with or
 *  without Check-Quorum (docs/raft-core.md "The leader lease"). With these options the
 *  lease holds only with Check-Quorum, so such a schedule plays out as written. */
export const SCRIPTED_ELECTIONS = { testOnlyLeaseOnlyWithCheckQuorum: true } as const;

/** the core's test-only switches that `o` turns on (RaftConfig's `testOnly…` and
 *  `unsafe…` options, docs/simulation.md "Mutation table"), passed through as they are */
function testSwitches(o: NodeOptions): Partial<RaftConfig> {
  const on: Record<string, true> = {};
  for (const [k, v] of Object.entries(o)) if ((k.startsWith('testOnly') || k.startsWith('unsafe')) && v === true) on[k] = true;
  return on;
}

export type NodeOptions = Partial<Omit<RaftConfig, 'id' | 'rng' | 'incarnation'>> & {
  seed?: number;
  /** give every node's storage an incarnation (`<id>#<k>`, k counting wipes) */
  incarnations?: boolean;
};

export interface SimNode {
  id: NodeId;
  raw: RawNode;
  storage: MemoryStorage;
  cfg: RaftConfig;
  /** every committed entry handed to the application, in order (reset on restart) */
  applied: Entry[];
  readStates: ReadState[];
  /** every Ready this node produced, for assertions on ordering */
  readies: Ready[];
}

export const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
export const dec = (b: Uint8Array): string => new TextDecoder().decode(b);

export class Network {
  readonly nodes = new Map<NodeId, SimNode>();
  queue: Message[] = [];
  /** every message delivered or dropped, for assertions */
  readonly sent: Message[] = [];
  private readonly cut = new Set<string>();
  private dropIf: ((m: Message) => boolean) | null = null;
  /** when set, every line of every Ready processed is appended here (golden tests) */
  transcript: string[] | null = null;
  /** safety checker: the entry every node applied at each index (state machine safety, §5.4.3) */
  private readonly appliedAt = new Map<number, string>();
  /** storages made per node (an incarnation each) */
  private readonly disks = new Map<NodeId, number>();
  private readonly seedConf: ConfState;

  constructor(
    ids: readonly NodeId[],
    readonly opts: NodeOptions = {},
    conf: ConfState = { voters: [...ids], learners: [] },
  ) {
    this.seedConf = conf;
    for (const id of ids) this.addNode(id, conf);
  }

  static create(n: number, opts: NodeOptions = {}): Network {
    return new Network(Array.from({ length: n }, (_, k) => `n${k + 1}`), opts);
  }

  private config(id: NodeId, k: number, applied?: number): RaftConfig {
    const o = this.opts;
    return {
      id,
      electionTicks: o.electionTicks ?? 10,
      heartbeatTicks: o.heartbeatTicks ?? 1,
      rng: seededRng((o.seed ?? 1) * 1000 + k),
      preVote: o.preVote ?? false,
      checkQuorum: o.checkQuorum ?? false,
      maxInflight: o.maxInflight ?? 256,
      maxMsgBytes: o.maxMsgBytes ?? 1 << 20,
      ...(applied !== undefined ? { applied } : {}),
      ...(o.lazyCommit !== undefined ? { lazyCommit: o.lazyCommit } : {}),
      ...(o.trace ? { trace: o.trace } : {}),
      ...(o.onLogRegression ? { onLogRegression: o.onLogRegression } : {}),
      ...(o.incarnations ? { incarnation: `${id}#${this.disks.get(id) ?? 1}` } : {}),
      ...testSwitches(o),
    };
  }

  /** the node's disk is lost: it restarts on a blank storage (the seed conf) under the
   *  same id, as a new incarnation */
  wipe(id: NodeId): SimNode {
    this.node(id);
    this.disks.set(id, (this.disks.get(id) ?? 1) + 1);
    const storage = new MemoryStorage(this.seedConf);
    const k = [...this.nodes.keys()].indexOf(id) + 1;
    const cfg = this.config(id, k + 1000 * (this.disks.get(id) ?? 1));
    const node: SimNode = { id, raw: new RawNode(cfg, storage), storage, cfg, applied: [], readStates: [], readies: [] };
    this.nodes.set(id, node);
    this.queue = this.queue.filter((m) => m.to !== id && m.from !== id);
    return node;
  }

  /** add a node with a fresh storage whose snapshot holds `conf` (bootstrap) */
  addNode(id: NodeId, conf: ConfState, storage = new MemoryStorage(conf)): SimNode {
    if (!this.disks.has(id)) this.disks.set(id, 1);
    const cfg = this.config(id, this.nodes.size + 1);
    const node: SimNode = { id, raw: new RawNode(cfg, storage), storage, cfg, applied: [], readStates: [], readies: [] };
    this.nodes.set(id, node);
    return node;
  }

  node(id: NodeId): SimNode {
    const n = this.nodes.get(id);
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }
  ids(): NodeId[] {
    return [...this.nodes.keys()];
  }

  // ---- faults ------------------------------------------------------------------------
  cutLink(a: NodeId, b: NodeId): void {
    this.cut.add(`${a}>${b}`);
    this.cut.add(`${b}>${a}`);
  }
  isolate(id: NodeId): void {
    for (const other of this.nodes.keys()) if (other !== id) this.cutLink(id, other);
  }
  /** drop every message matching pred until recover() */
  drop(pred: (m: Message) => boolean): void {
    this.dropIf = pred;
  }
  recover(): void {
    this.cut.clear();
    this.dropIf = null;
  }
  private delivers(m: Message): boolean {
    if (!this.nodes.has(m.to)) return false;
    if (this.cut.has(`${m.from}>${m.to}`)) return false;
    return !(this.dropIf && this.dropIf(m));
  }

  /** simulate a crash and restart: only what was persisted survives */
  restart(id: NodeId, applied?: number): SimNode {
    const old = this.node(id);
    const k = [...this.nodes.keys()].indexOf(id) + 1;
    const cfg = this.config(id, k + 100 * (old.readies.length + 1), applied);
    const node: SimNode = { id, raw: new RawNode(cfg, old.storage), storage: old.storage, cfg, applied: [], readStates: [], readies: [] };
    this.nodes.set(id, node);
    this.queue = this.queue.filter((m) => m.to !== id && m.from !== id);
    return node;
  }

  // ---- driving -----------------------------------------------------------------------
  /** one Ready iteration of one node, in the persistence order of types.ts */
  handleReady(id: NodeId): boolean {
    const n = this.node(id);
    if (!n.raw.hasReady()) return false;
    const rd = n.raw.ready();
    n.readies.push(rd);
    this.checkReady(n, rd);
    if (this.transcript) for (const line of describeReadyLines(rd)) this.transcript.push(`  ${id} ${line}`);
    this.enqueue(rd.earlyMessages); // 1. may leave before persisting
    n.storage.applyBatch(rd); // 2. persist atomically
    this.enqueue(rd.messages); // 3. only after persisting
    if (rd.snapshot) n.applied = []; // 4. restore the app from the snapshot …
    n.applied.push(...rd.committed); //    … then apply in order
    n.readStates.push(...rd.readStates);
    n.raw.advance(rd); // 5.
    return true;
  }

  /** invariants every Ready must satisfy, checked on every iteration of every test */
  private checkReady(n: SimNode, rd: Ready): void {
    const durableTerm = n.storage.hardState().term;
    for (const m of rd.earlyMessages) {
      if (!['append', 'heartbeat', 'snapshot', 'timeoutNow'].includes(m.type)) throw new Error(`${n.id}: ${m.type} in earlyMessages`);
      if (m.term > durableTerm) throw new Error(`${n.id}: early ${m.type} of term ${m.term} before term ${m.term} is durable (${durableTerm})`);
    }
    const termOrVoteChanged = rd.hardState !== undefined && (rd.hardState.term !== durableTerm || rd.hardState.vote !== n.storage.hardState().vote);
    if ((rd.entries.length > 0 || termOrVoteChanged) && !rd.mustSync) throw new Error(`${n.id}: Ready with entries or a term/vote change lacks mustSync`);
    for (const e of rd.committed) {
      const key = `${e.term}:${e.kind}:${dec(e.data)}`;
      const prev = this.appliedAt.get(e.index);
      if (prev === undefined) this.appliedAt.set(e.index, key);
      else if (prev !== key) throw new Error(`SAFETY: ${n.id} applied ${key} at ${e.index}, another node applied ${prev}`);
    }
  }

  private enqueue(msgs: readonly Message[]): void {
    for (const m of msgs) this.queue.push(m);
  }

  /** deliver every queued message matching pred (all by default), in FIFO order; returns how many */
  deliver(pred: (m: Message) => boolean = () => true): number {
    const now = this.queue.filter(pred);
    this.queue = this.queue.filter((m) => !pred(m));
    for (const m of now) {
      this.sent.push(m);
      if (this.transcript) this.transcript.push(`  deliver ${describeMessage(m)}${this.delivers(m) ? '' : ' (dropped)'}`);
      const ok = this.delivers(m);
      if (ok) this.node(m.to).raw.step(m);
      // like a transport's onSnapshotStatus: the sender learns how a snapshot send went
      if (m.type === 'snapshot') this.nodes.get(m.from)?.raw.reportSnapshot(m.to, ok);
    }
    return now.length;
  }

  /** run Ready loops and deliver messages until nothing is left to do */
  stabilize(maxRounds = 10_000): void {
    for (let round = 0; round < maxRounds; round++) {
      let busy = false;
      for (const id of this.nodes.keys()) while (this.handleReady(id)) busy = true;
      if (this.deliver() > 0) busy = true;
      if (!busy) return;
    }
    throw new Error(`network did not stabilize within ${maxRounds} rounds`);
  }

  tick(id: NodeId, times = 1): void {
    for (let k = 0; k < times; k++) this.node(id).raw.tick();
  }
  tickAll(times = 1): void {
    for (let k = 0; k < times; k++) for (const n of this.nodes.values()) n.raw.tick();
  }
  /** tick everyone and stabilize after each tick */
  run(ticks: number): void {
    for (let k = 0; k < ticks; k++) {
      this.tickAll();
      this.stabilize();
    }
  }

  campaign(id: NodeId): void {
    this.node(id).raw.campaign();
    this.stabilize();
  }
  propose(id: NodeId, data: string): ReturnType<RawNode['propose']> {
    const res = this.node(id).raw.propose(enc(data));
    this.stabilize();
    return res;
  }

  leaders(): NodeId[] {
    return this.ids().filter((id) => this.node(id).raw.status().role === 'leader');
  }
  leader(): NodeId {
    const ls = this.leaders();
    if (ls.length !== 1) throw new Error(`expected one leader, found [${ls.join(',')}]`);
    return ls[0]!;
  }

  /** the stored log of a node as `index/term:kind:data` strings */
  logOf(id: NodeId): string[] {
    const s = this.node(id).storage;
    if (s.lastIndex() < s.firstIndex()) return [];
    return s.entries(s.firstIndex(), s.lastIndex() + 1).map((e) => `${e.index}/${e.term}${e.kind === 'normal' ? `:${dec(e.data)}` : `:${e.kind}`}`);
  }
  appliedData(id: NodeId): string[] {
    return this.node(id).applied.filter((e) => e.kind === 'normal').map((e) => dec(e.data));
  }
}

/** build a MemoryStorage holding the given terms at indexes 1..n (Figure 7 style) */
export function storageWithTerms(terms: readonly number[], conf: ConfState, hardTerm?: number): MemoryStorage {
  const s = new MemoryStorage(conf);
  s.append(terms.map((t, k) => ({ index: k + 1, term: t, kind: 'normal' as const, data: enc(`t${t}`) })));
  s.setHardState({ term: hardTerm ?? (terms[terms.length - 1] ?? 0), vote: null, commit: 0 });
  return s;
}

/** every node's Ready loop until none has one; nothing is delivered (tests that hand the
 *  messages over one by one) */
export function flushReadies(net: Network): void {
  for (const id of net.ids()) while (net.handleReady(id));
}

/** a message filter for deliver/queue: of this type, and from / to these nodes when given */
export const msgIs = (type: Message['type'], from?: NodeId, to?: readonly NodeId[]) => (m: Message): boolean =>
  m.type === type && (from === undefined || m.from === from) && (to === undefined || to.includes(m.to));
