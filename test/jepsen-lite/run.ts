// One jepsen-lite run: build the network (or fall back to loopback), start the nodes, the
// fenced resource, the probe and the clients, drive the nemesis for the duration, heal,
// let the cluster settle, read every lock, stop everything, run the checkers and write the
// run folder (history.jsonl, faults.jsonl, resource.jsonl, node logs, summary.json,
// summary.txt, timeline.html). Everything it started or created is removed in `finally`,
// also when a step throws or the process gets SIGINT/SIGTERM.
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { seededRng, type Rng } from '../../src/raft/core/rng.js';
import { freePort } from '../support/cluster-harness.js';
import { pairOps, type HistoryEvent } from '../checkers/history/history.js';
import { NetLab, netnsSupport } from './netns.js';
import { Helper, NodeProcs, siblingArgv, writeClusterFile, type NodeSpec } from './procs.js';
import { categoryOf, DEFAULT_FAULTS, FaultPlan, inject, schedule, type FaultCategory, type NemesisEnv, type Variant } from './nemesis.js';
import { ClusterOps } from './run-cluster-ops.js';
import { clockKickFlags, faketimeLibrary, FakeClocks } from './clock.js';
import { clockFrom } from './recorder.js';
import { electionsInLog, type FaultRecord, type LagSample } from '../checkers/history/index.js';
import type { ResourceArgs } from './resource-proc.js';
import type { AccessLogEntry, BankLogEntry, ResourceLogEntry } from '../checkers/history/resource-logs.js';
import { ACCOUNT_PREFIX, ACCOUNTS, OPENING_BALANCE, WAIT_LOCKS, WAIT_PREFIX, assignWorkloads, defaultClients, ELECTION_PREFIX, ELECTIONS, SEM_LIMIT, SEM_PREFIX, SEMAPHORES, SHARED_LOCKS, SHARED_PREFIX, LOCK_PREFIX, type Workload } from './workloads.js';
import type { WatchArgs } from './watch-proc.js';
import type { WatchRecord } from '../checkers/history/watch-records.js';
import { writeTimeline } from './timeline.js';
import type { ClientArgs } from './client-proc.js';
import { check, summaryText, type RunSummary } from './summary.js';

export type { RunSummary } from './summary.js';
export { summaryText } from './summary.js';

export interface RunOptions {
  nodes: number;
  durationMs: number;
  seed: number;
  faults: FaultCategory[];
  /** variants scheduled once more in every round (e.g. kill-all, normally once per run) */
  emphasise: Variant[];
  /** variants never scheduled (e.g. one that finds a bug still being fixed) */
  without?: Variant[];
  clients: number;
  /** what the clients run, assigned round-robin (c1 the first, c2 the second, …; a name
   *  may appear more than once to weight it): workloads.ts */
  workloads: Workload[];
  locks: number;
  ttlMs: number;
  electionMs: [number, number];
  heartbeatMs: number;
  /** where run folders go */
  outDir: string;
  /** the resource rejects stale tokens (false: the control run) */
  fencing: boolean;
  /** use network namespaces when possible */
  netns: boolean;
  livenessBoundMs: number;
  rssLimitMb: number;
  /** one watch stream per node, checked against each other and the history (test/checkers/history/watch.ts) */
  watch: boolean;
  log?: (line: string) => void;
}

export function defaultOptions(over: Partial<RunOptions> = {}): RunOptions {
  const electionMs: [number, number] = over.electionMs ?? [500, 1000];
  const ttlMs = over.ttlMs ?? 2000;
  return {
    nodes: 3,
    durationMs: 60_000,
    seed: Date.now() % 1_000_000,
    faults: [...DEFAULT_FAULTS],
    emphasise: [],
    clients: defaultClients(over.nodes ?? 3, over.workloads ?? ['lock']),
    workloads: ['lock'],
    locks: 3,
    ttlMs,
    electionMs,
    heartbeatMs: 100,
    outDir: 'jepsen-runs',
    fencing: true,
    netns: true,
    // after a heal: up to one election timeout before the first campaign and one more for a
    // split vote, then one TTL for the sessions of holders that died to lapse (a new leader
    // gives every session a full TTL) — 4 s with the defaults (docs/recovery.md)
    livenessBoundMs: over.livenessBoundMs ?? 2 * electionMs[1] + ttlMs,
    rssLimitMb: 400,
    // the command line turns it on (--no-watch off); of the runs in npm test only
    // jepsen-3.test.ts asks for it, so the others cost what they did
    watch: false,
    ...over,
  };
}

/** how long restarted nodes may take to serve before the run calls it a failure */
const RESTART_LIMIT_MS = 120_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function runJepsen(opts: RunOptions): Promise<RunSummary> {
  const run = new Run(opts);
  const onSignal = (sig: NodeJS.Signals): void => {
    run.log(`jepsen-lite: ${sig}: cleaning up`);
    void run.cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await run.execute();
  } finally {
    await run.cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

class Run {
  readonly log: (line: string) => void;
  readonly runId = randomBytes(3).toString('hex').slice(0, 5);
  readonly dir: string;
  private readonly t0 = process.hrtime.bigint();
  readonly now = clockFrom(this.t0);
  /** Date.now() when the run's clock read 0: node logs carry wall-clock times */
  private readonly wallAtZero = Date.now();
  private readonly nemesisRng: Rng;
  private readonly clientSeeds: Rng;
  private readonly ids: string[];
  private readonly events: HistoryEvent[] = [];
  private readonly faults: FaultRecord[] = [];
  private readonly helpers: Helper[] = [];
  private readonly clients: Helper[] = [];
  private readonly pausedClients = new Set<string>();
  private lab: NetLab | null = null;
  private netnsNote = 'disabled by --no-netns';
  private categories: FaultCategory[];
  private readonly skipped: FaultCategory[] = [];
  private nodes: NodeProcs | null = null;
  private probe: Helper | null = null;
  private watcher: Helper | null = null;
  private readonly watchRecords: WatchRecord[] = [];
  /** every stream's index after the final drain (null: not drained) */
  private watchDrained: Record<string, number> | null = null;
  private specs: NodeSpec[] = [];
  /** the network slot a grown cluster's extra node takes (member-grow), null while taken */
  private spare: NodeSpec | null = null;
  /** ids for nodes that join later (membership fault): n<nodes+1>, n<nodes+2>, … */
  private nextNode: number;
  /** what a fault found the system doing wrong: membership faults that could not put the
   *  cluster back to its size, restarts that did not serve in time, damaged disks that
   *  crashed a node, … (checked as violations) */
  private readonly memberProblems: string[] = [];
  private ops: ClusterOps | null = null;
  /** the leader's view of each member's lag, sampled between fault episodes */
  private readonly lagSamples: LagSample[] = [];
  /** a fault episode is under way (inject, hold, heal, settle) */
  private inFault = false;
  /** what every client knows (the names of each workload) */
  private base: Omit<ClientArgs, 'role' | 'id' | 'seed'> | null = null;
  /** the nodes' fake clocks (the `clock` fault), null when the run has none */
  private clocks: FakeClocks | null = null;

  constructor(private readonly opts: RunOptions) {
    this.log = opts.log ?? ((l: string) => process.stdout.write(l + '\n'));
    // absolute: the nodes resolve paths in their config (the secret file) against the
    // config's own folder, so a relative run folder would be doubled
    this.dir = join(resolve(opts.outDir), `${new Date().toISOString().replace(/[:.]/g, '-')}-n${opts.nodes}-seed${opts.seed}-${this.runId}`);
    const rng = seededRng(opts.seed);
    this.nemesisRng = rng.fork();
    this.clientSeeds = rng.fork();
    this.ids = Array.from({ length: opts.nodes }, (_, i) => `n${i + 1}`);
    this.categories = [...opts.faults];
    this.nextNode = opts.nodes + 1;
  }

  private file(name: string): string {
    return join(this.dir, name);
  }

  private faultLog(o: Record<string, unknown>): void {
    appendFileSync(this.file('faults.jsonl'), JSON.stringify({ t: Number(this.now().toFixed(1)), ...o }) + '\n');
  }

  async execute(): Promise<RunSummary> {
    const o = this.opts;
    mkdirSync(this.dir, { recursive: true });
    for (const f of ['history.jsonl', 'faults.jsonl', 'resource.jsonl', 'access.jsonl', 'watch.jsonl']) writeFileSync(this.file(f), '');
    // node logs carry wall-clock times; this puts them on the run's clock (also for --recheck)
    this.faultLog({ clock: 'run start', wallAtZero: this.wallAtZero });
    this.log(`jepsen-lite: SEED=${o.seed} nodes=${o.nodes} clients=${o.clients} workloads=${[...new Set(o.workloads)].join(',')} duration=${o.durationMs}ms faults=${o.faults.join(',')} fencing=${o.fencing} dir=${this.dir}`);
    await this.buildNetwork();
    await this.startNodes();
    const base = await this.startHelpers();
    this.base = base;
    // start-up alone takes over 30 s when 5 nodes start on a loaded 2-core machine
    const first = await this.waitLeader(RESTART_LIMIT_MS);
    if (!first) throw new Error(`no leader within ${RESTART_LIMIT_MS / 1000} s (${this.netnsNote}); node logs in ${this.dir}`);
    this.log(`jepsen-lite: leader ${first}; network: ${this.netnsNote}${this.lab ? `; packet faults: ${this.lab.packetMode}` : ''}`);
    if (o.watch) await this.startWatcher(base.endpoints);
    const workloads = assignWorkloads(o.workloads, o.clients);
    for (let i = 0; i < o.clients; i++) {
      const id = `c${i + 1}`;
      const c = new Helper(siblingArgv('client-proc'), { ...base, role: 'client', id, seed: this.clientSeeds.int(1, 2 ** 31), workload: workloads[i]! } satisfies ClientArgs, this.lab, (e) => this.onEvent(e), this.file(`${id}.err`));
      this.clients.push(c);
      this.helpers.push(c);
    }
    const np = this.nodes!;
    const rssTimer = setInterval(() => np.sampleRss(), 1000);
    // how far behind the leader's log each member is, every 3 s between fault episodes
    // (checkFollowersBehind looks at those only; during one the probe is the nemesis's)
    let sampling = false;
    const lagTimer = setInterval(() => {
      if (sampling || this.inFault) return;
      sampling = true;
      void this.ops!.leaderView()
        .then((v) => {
          const lags: Record<string, number> = {};
          for (const m of v?.members ?? []) if (m.lag !== undefined) lags[m.id] = m.lag;
          if (v) this.lagSamples.push({ t: this.now(), lags });
        })
        .finally(() => (sampling = false));
    }, 3000);
    try {
      await this.driveNemesis();
      return await this.finish();
    } finally {
      clearInterval(rssTimer);
      clearInterval(lagTimer);
    }
  }

  // ---- setup ---------------------------------------------------------------------------

  private async buildNetwork(): Promise<void> {
    if (this.opts.netns) {
      const sup = await netnsSupport();
      if (sup.ok) {
        try {
          this.lab = await NetLab.create({ runId: this.runId, nodes: [...this.ids, 'spare'], trace: (l) => this.faultLog({ cmd: l }) });
          this.netnsNote = `network namespaces rlj${this.runId}-*, bridge ${this.lab.bridge}`;
        } catch (err) {
          // root without CAP_NET_ADMIN (a default container), or no netns support in the kernel
          this.netnsNote = `cannot build network namespaces (${(err as Error).message.split('\n')[0]})`;
        }
      } else this.netnsNote = sup.reason;
    }
    if (this.lab) return;
    for (const c of ['partition', 'packet'] as const) {
      if (this.categories.includes(c)) this.skipped.push(c);
    }
    this.categories = this.categories.filter((c) => !this.skipped.includes(c));
    if (this.skipped.length) this.log(`jepsen-lite: SKIPPING ${this.skipped.join(' and ')} faults: no network namespaces (${this.netnsNote}); kills and pauses still run`);
  }

  private async slotSpec(slot: string): Promise<NodeSpec> {
    if (this.lab) {
      const ip = this.lab.ip(slot);
      return { id: slot, slot, api: `http://${ip}:17001`, peer: `http://${ip}:17101`, listenApi: `${ip}:17001`, listenPeer: `${ip}:17101` };
    }
    const a = await freePort();
    const p = await freePort();
    return { id: slot, slot, api: `http://127.0.0.1:${a}`, peer: `http://127.0.0.1:${p}`, listenApi: `127.0.0.1:${a}`, listenPeer: `127.0.0.1:${p}` };
  }

  private async startNodes(): Promise<void> {
    for (const id of this.ids) this.specs.push(await this.slotSpec(id));
    this.spare = await this.slotSpec('spare');
    const configPath = this.file('cluster.config.json');
    writeClusterFile(configPath, this.specs, this.file('data'), this.opts.ttlMs, this.opts.electionMs, this.opts.heartbeatMs);
    const env: Record<string, string> = this.categories.includes('unsynced') ? { RAFTLOCK_TEST_UNSYNCED_LOSS: '1' } : {};
    if (this.categories.includes('clock')) {
      const lib = faketimeLibrary();
      if (lib) this.clocks = new FakeClocks(lib, this.dir);
      else {
        this.skipped.push('clock');
        this.categories = this.categories.filter((c) => c !== 'clock');
        this.log('jepsen-lite: SKIPPING clock faults: libfaketime (libfaketimeMT.so.1) is not installed (scripts/install-test-deps.sh installs Debian\'s faketime)');
      }
    }
    const clocks = this.clocks;
    const perStart = clocks
      ? (id: string): { env: Record<string, string>; nodeFlags: string[] } => {
          const wall = this.ops?.wallNext.delete(id) === true;
          return { env: clocks.envFor(id, wall ? 'wall' : 'rate'), nodeFlags: clockKickFlags() };
        }
      : undefined;
    this.nodes = new NodeProcs({ dir: this.dir, configPath, specs: this.specs, lab: this.lab, env, now: this.now, ...(perStart ? { perStart } : {}) });
    for (const id of this.ids) this.nodes.start(id);
  }

  /** the fenced resource and the probe; returns what every client needs to know */
  private async startHelpers(): Promise<Omit<ClientArgs, 'role' | 'id' | 'seed'>> {
    const portP = new Promise<number>((resolve) => {
      const args: ResourceArgs = { logFile: this.file('resource.jsonl'), accessLogFile: this.file('access.jsonl'), bankLogFile: this.file('bank.jsonl'), openingBalance: OPENING_BALANCE, fencing: this.opts.fencing, t0: this.t0.toString(), host: '127.0.0.1' };
      const h = new Helper(siblingArgv('resource-proc'), args, this.lab, (o) => {
        if (typeof o.port === 'number') resolve(o.port);
      }, this.file('resource.err'));
      this.helpers.push(h);
    });
    const port = await Promise.race([portP, sleep(15_000).then(() => 0)]);
    if (!port) throw new Error('the fenced resource did not start');
    const base = {
      endpoints: this.specs.map((s) => s.api),
      resource: `http://127.0.0.1:${port}`,
      // only the names some client uses (the probe reads every one at the end)
      locks: this.opts.workloads.includes('lock') ? Array.from({ length: this.opts.locks }, (_, i) => `${LOCK_PREFIX}${i}`) : [],
      sharedLocks: this.opts.workloads.includes('shared') ? Array.from({ length: SHARED_LOCKS }, (_, i) => `${SHARED_PREFIX}${i}`) : [],
      semaphores: this.opts.workloads.includes('semaphore') ? Array.from({ length: SEMAPHORES }, (_, i) => `${SEM_PREFIX}${i}`) : [],
      elections: this.opts.workloads.includes('election') ? Array.from({ length: ELECTIONS }, (_, i) => `${ELECTION_PREFIX}${i}`) : [],
      accounts: this.opts.workloads.includes('transfer') ? Array.from({ length: ACCOUNTS }, (_, i) => `${ACCOUNT_PREFIX}${i}`) : [],
      waitLocks: this.opts.workloads.includes('wait') ? Array.from({ length: WAIT_LOCKS }, (_, i) => `${WAIT_PREFIX}${i}`) : [],
      semLimit: SEM_LIMIT,
      ttlMs: this.opts.ttlMs,
      t0: this.t0.toString(),
    };
    // the probe also reaches the spare slot (a grown cluster's extra node)
    const probeArgs = { ...base, endpoints: [...base.endpoints, this.spare!.api], role: 'probe', id: 'probe', seed: 0 } satisfies ClientArgs;
    this.probe = new Helper(siblingArgv('client-proc'), probeArgs, this.lab, (e) => this.onEvent(e), this.file('probe.err'));
    this.helpers.push(this.probe);
    this.ops = new ClusterOps({
      // the same arrays, changed in place by both sides
      ids: this.ids,
      specs: this.specs,
      spare: () => this.spare,
      takeSpare: (v) => {
        this.spare = v;
      },
      nodes: this.nodes!,
      probe: this.probe,
      lab: this.lab,
      clocks: this.clocks,
      dir: this.dir,
      configPath: this.file('cluster.config.json'),
      now: this.now,
      faultLog: (o) => this.faultLog(o),
      problem: (p) => {
        this.memberProblems.push(p);
        this.faultLog({ problem: p });
      },
      newId: () => `n${this.nextNode++}`,
      restart: (xs) => this.restart(xs),
    });
    return base;
  }

  /** the watch streams (watch-proc.ts), live on every node before any client starts, so
   *  that every operation of the history happens inside them */
  private async startWatcher(endpoints: string[]): Promise<void> {
    const args: WatchArgs = { endpoints, t0: this.t0.toString() };
    this.watcher = new Helper(siblingArgv('watch-proc'), args, this.lab, (o) => {
      if (typeof o.w === 'string') this.watchRecords.push(o as unknown as WatchRecord);
    }, this.file('watch.err'));
    this.helpers.push(this.watcher);
    const t = this.now();
    const at = (await this.watcher.ask({ cmd: 'drain', deadlineMs: 30_000 }, 35_000)) as Record<string, number> | null;
    this.log(`jepsen-lite: watch streams at ${at ? Object.entries(at).map(([k, v]) => `${k} ${v}`).join(', ') : 'unknown (no answer)'} (${Math.round(this.now() - t)} ms)`);
  }

  private onEvent(o: Record<string, unknown>): void {
    if (typeof o.id !== 'string' || typeof o.type !== 'string') return;
    const e = o as unknown as HistoryEvent;
    this.events.push(e);
    appendFileSync(this.file('history.jsonl'), JSON.stringify(e) + '\n');
  }

  // ---- cluster views -------------------------------------------------------------------

  private async leader(): Promise<string | null> {
    const views = (await this.probe!.ask({ cmd: 'cluster' }, 3000)) as { status?: number; body?: { role?: string; node_id?: string; term?: number } }[] | null;
    let best: { id: string; term: number } | null = null;
    for (const v of views ?? []) {
      if (v.status === 200 && v.body?.role === 'leader' && v.body.node_id && (!best || (v.body.term ?? 0) > best.term)) best = { id: v.body.node_id, term: v.body.term ?? 0 };
    }
    return best?.id ?? null;
  }

  private async waitLeader(ms: number): Promise<string | null> {
    const end = this.now() + ms;
    while (this.now() < end) {
      const l = await this.leader();
      if (l) return l;
      await sleep(100);
    }
    return null;
  }

  /** restart killed nodes; the heal ends when they serve again (process start-up is not
   *  the cluster's recovery, and on a loaded machine it alone can take seconds) */
  private async restart(xs: string[]): Promise<void> {
    const np = this.nodes!;
    for (const x of xs) if (!np.running(x)) np.start(x);
    // Wait for real: a heal that ended before the nodes serve would charge their start-up
    // (over 30 s on a loaded 2-core machine) to the recovery and leader-change checkers.
    const started = this.now();
    const end = started + RESTART_LIMIT_MS;
    while (this.now() < end) {
      // a node removed meanwhile (member-failover-leader) is stopped again: no longer awaited
      const want = xs.filter((x) => this.ids.includes(x)).map((x) => this.specs.find((s) => s.id === x)!.api);
      const up = ((await this.probe!.ask({ cmd: 'health' }, 3000)) as string[] | null) ?? [];
      if (want.every((w) => up.includes(w))) return;
      await sleep(50);
    }
    const problem = `restart: ${xs.join(',')} did not all answer /healthz within ${RESTART_LIMIT_MS / 1000} s of being started`;
    this.memberProblems.push(problem);
    this.faultLog({ restart: problem });
  }

  /** clients whose latest completed event is a successful res-read or res-begin: inside the critical section */
  private holding(): string[] {
    const last = new Map<string, HistoryEvent>();
    for (let i = this.events.length - 1; i >= 0 && last.size < this.clients.length; i--) {
      const e = this.events[i]!;
      if (/^c\d+$/.test(e.process) && !last.has(e.process) && e.type !== 'invoke') last.set(e.process, e);
    }
    return [...last.entries()].filter(([, e]) => (e.f === 'res-read' || e.f === 'res-begin') && e.type === 'ok').map(([p]) => p);
  }

  private client(c: string): Helper {
    return this.clients[Number(c.slice(1)) - 1]!;
  }

  // ---- nemesis -------------------------------------------------------------------------

  private nemesisEnv(): NemesisEnv {
    const np = this.nodes!;
    const ops = this.ops!;
    const lab = (): NetLab => {
      if (!this.lab) throw new Error('network faults need network namespaces');
      return this.lab;
    };
    return {
      nodes: this.ids,
      ttlMs: this.opts.ttlMs,
      electionMaxMs: this.opts.electionMs[1],
      netns: this.lab !== null,
      leader: () => this.leader(),
      kill: (xs) => np.killMany(xs),
      restart: (xs) => this.restart(xs),
      pauseNode: (x) => np.pause(x),
      resumeNode: (x) => np.resume(x),
      pickHolder: async (waitMs) => {
        const end = this.now() + waitMs;
        while (this.now() < end) {
          const h = this.holding().filter((c) => !this.pausedClients.has(c));
          if (h.length) return h[0]!;
          await sleep(5);
        }
        return `c${this.nemesisRng.int(1, this.clients.length + 1)}`;
      },
      pauseClient: (c) => {
        this.pausedClients.add(c);
        this.client(c).pause();
      },
      resumeClient: (c) => {
        this.pausedClients.delete(c);
        this.client(c).resume();
      },
      split: (a, b) => lab().split(a, b),
      cut: (a, b) => lab().cut(a, b),
      healPartitions: async () => this.lab?.healPartitions(),
      startPacket: () => lab().startPacketFaults({ delayMs: 20, jitterMs: 15, loss: 10, duplicate: 5, reorder: 15 }),
      stopPacket: async () => this.lab?.stopPacketFaults(),
      sleep,
      problem: (p) => {
        this.memberProblems.push(p);
        this.faultLog({ problem: p });
      },
      removeMember: (x) => ops.removeMember(x),
      deleteOnce: (x) => ops.deleteOnce(x),
      members: () => ops.members(),
      addMember: (slotOf, o) => ops.addMember(slotOf, o),
      growMember: () => ops.growMember(),
      transferLeadership: (to) => ops.transferLeadership(to),
      wipeAndRestart: (x) => this.wipeAndRestart(x),
      rebuild: (x) => ops.rebuild(x),
      acked: (x) => ops.acked(x),
      walMark: (x) => ops.walMark(x),
      surgery: (x, f) => ops.surgery(x, f),
      restartDamaged: (x) => ops.restartDamaged(x),
      watchReadiness: (x, ms) => ops.watchReadiness(x, ms),
      clockMode: (x) => this.clocks?.mode(x),
      setClock: (x, spec) => {
        this.clocks?.set(x, spec);
        this.faultLog({ clock: x, spec });
      },
      restartWallClock: (x) => ops.restartWallClock(x),
      revokeLeader: async () => {
        const name = `${ELECTION_PREFIX}0`;
        const r = (await this.probe!.ask({ cmd: 'revoke', name }, 15_000)) as { leader: string | null; revoked: { session: string; token: number }[] | null; type: string } | null;
        if (!r) return `revoke ${name}: no answer from the probe`;
        const what = r.revoked === null ? r.type : r.revoked.length ? r.revoked.map((g) => `${g.session.slice(0, 8)} (token ${g.token})`).join(', ') : 'nothing';
        return `revoke ${name}${r.leader ? ` of leader ${r.leader.slice(0, 8)}` : ' (no leader read)'}: revoked ${what}`;
      },
      revokeGrants: async (target) => {
        const names = target === 'lock' ? [...this.base!.locks, ...this.base!.sharedLocks, ...(this.base!.accounts ?? []), ...(this.base!.waitLocks ?? [])] : this.base!.semaphores;
        if (names.length === 0) return `revoke: no ${target} in this run's workloads`;
        const name = names[this.nemesisRng.int(0, names.length)]!;
        const r = (await this.probe!.ask({ cmd: 'revoke-grants', target, name }, 15_000)) as { holder: string | null; revoked: { session: string; token: number }[] | null; type: string } | null;
        if (!r) return `revoke ${name}: no answer from the probe`;
        const what = r.revoked === null ? r.type : r.revoked.length ? r.revoked.map((g) => `${g.session.slice(0, 8)} (token ${g.token})`).join(', ') : 'nothing';
        return `revoke ${target} ${name}${r.holder ? ` of holder ${r.holder.slice(0, 8)}` : ' (every grant)'}: revoked ${what}`;
      },
    };
  }

  /** the `wipe` fault: lose `id`'s data directory and start it again under its id; a node
   *  must refuse that (docs/membership.md, "A node whose data directory is gone") */
  private async wipeAndRestart(id: string): Promise<{ code: number | null; line: string | null; ms: number }> {
    const np = this.nodes!;
    await np.kill(id);
    rmSync(join(this.file('data'), id), { recursive: true, force: true });
    const logPath = this.file(`${id}.log`);
    const from = existsSync(logPath) ? statSync(logPath).size : 0;
    const started = this.now();
    const exit = await np.startExpectingExit(id, 60_000);
    const ms = Math.round(this.now() - started);
    await sleep(200); // the log stream may trail the exit
    const out = existsSync(logPath) ? readFileSync(logPath, 'utf8').slice(from) : '';
    const line = out.split('\n').find((l) => l.startsWith(`raftlock: node ${id} has lost its data`)) ?? null;
    this.faultLog({ wipe: id, exit, ms, line });
    return { code: exit?.code ?? null, line, ms };
  }

  private grantAfter(t: number): boolean {
    for (let i = this.events.length - 1; i >= 0 && this.events[i]!.t >= t - 60_000; i--) {
      const e = this.events[i]!;
      if ((e.f === 'acquire' || e.f === 'sem-acquire' || e.f === 'campaign') && e.type === 'ok' && e.t >= t) return true;
    }
    return false;
  }

  /** fault episodes until the duration is over: inject, hold, heal, settle, quiet */
  private async driveNemesis(): Promise<void> {
    const env = this.nemesisEnv();
    const rng = this.nemesisRng;
    await sleep(3000); // warm-up
    const endAt = this.now() + this.opts.durationMs - 3000;
    const plan = new FaultPlan(schedule(rng, this.categories, this.opts.nodes, 400, this.opts.emphasise.filter((x) => this.categories.includes(categoryOf(x))), this.opts.workloads, this.opts.without));
    // A kind that has not landed by the end is still owed: the run goes on (bounded) with
    // only the owed kinds, so a slow episode on a loaded machine does not crowd one out
    const latest = endAt + Math.max(20_000, this.opts.durationMs / 2);
    for (let v = plan.next(); v !== undefined; v = plan.next()) {
      if (this.now() >= endAt) {
        const owed = plan.owed();
        if (owed.length === 0 || this.now() >= latest) break;
        if (!owed.includes(categoryOf(v))) continue;
        this.log(`jepsen-lite: t=${(this.now() / 1000).toFixed(1)}s the run is over but ${owed.join(', ')} never landed: ${v} after the end`);
      }
      const start = this.now();
      this.inFault = true;
      let fault: Awaited<ReturnType<typeof inject>>;
      try {
        fault = await inject(v, env, rng);
      } catch (err) {
        this.faultLog({ fault: v, error: (err as Error).message });
        this.log(`jepsen-lite: could not inject ${v}: ${(err as Error).message}`);
        await env.healPartitions().catch(() => undefined);
        // what it did before it failed is a fault window for the checkers all the same
        this.faults.push({ variant: v, detail: `could not inject: ${(err as Error).message}`, start, end: this.now(), failed: true });
        this.inFault = false;
        if (plan.failed(v)) {
          await this.waitLeader(10_000);
          await sleep(rng.int(800, 2000));
        }
        continue;
      }
      plan.landed(v);
      this.faultLog({ fault: v, start: true, at: Number(start.toFixed(1)), detail: fault.detail, ...(fault.clock ? { clock: fault.clock } : {}) });
      if (fault.problem !== undefined) this.memberProblems.push(fault.problem);
      this.log(`jepsen-lite: t=${(start / 1000).toFixed(1)}s ${v}: ${fault.detail}`);
      await sleep(fault.holdMs);
      try {
        await fault.heal();
      } catch (err) {
        const p = `${v}: the heal failed: ${(err as Error).message}`;
        this.memberProblems.push(p);
        this.faultLog({ fault: v, healError: (err as Error).message });
      }
      const end = this.now();
      this.faultLog({ fault: v, heal: true });
      this.faults.push({ variant: v, detail: fault.detail, start, end, ...(fault.clock ? { clock: fault.clock } : {}) });
      // settle: wait for the next grant (bounded), then a quiet spell
      const settleEnd = end + this.opts.livenessBoundMs + 4000;
      while (this.now() < settleEnd && !this.grantAfter(end)) await sleep(50);
      this.inFault = false;
      await sleep(rng.int(800, 2000));
    }
    // the quiet tail; when the run went on for an owed kind, its own settle was the tail
    while (this.now() < endAt + 3000) await sleep(50);
  }

  // ---- the end -------------------------------------------------------------------------

  /** heal everything, stop the workload, read every lock, clean up, check, write the folder */
  private async finish(): Promise<RunSummary> {
    const np = this.nodes!;
    for (const c of [...this.pausedClients]) this.client(c).resume();
    this.pausedClients.clear();
    await this.lab?.healPartitions();
    await this.lab?.stopPacketFaults();
    for (const id of this.ids) {
      this.clocks?.set(id, this.clocks.mode(id) === 'wall' ? '+0' : '+0 x1');
      if (!np.running(id)) np.start(id);
      np.resume(id);
    }
    const runEnd = this.now();
    this.faultLog({ final: 'stopping clients' });
    await Promise.all(this.clients.map((c) => c.stop(15_000)));
    await this.waitLeader(20_000);
    const finalOk = await this.probe!.ask({ cmd: 'read-all', deadlineMs: 15_000 }, 20_000);
    await this.probe!.stop(5000);
    if (this.watcher) {
      // every stream up to the same index (the clients' closes are the last entries)
      const t = this.now();
      this.watchDrained = (await this.watcher.ask({ cmd: 'drain', deadlineMs: 15_000 }, 20_000)) as Record<string, number> | null;
      this.log(`jepsen-lite: watch streams drained to ${this.watchDrained ? Object.entries(this.watchDrained).map(([k, v]) => `${k} ${v}`).join(', ') : 'unknown (no answer)'} (${Math.round(this.now() - t)} ms)`);
      await this.watcher.stop(5000);
      writeFileSync(this.file('watch.jsonl'), this.watchRecords.map((r) => JSON.stringify(r)).join('\n') + (this.watchRecords.length ? '\n' : ''));
    }
    const resourceLog = readFileSync(this.file('resource.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as ResourceLogEntry);
    const accessLog = readFileSync(this.file('access.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as AccessLogEntry);
    const bankLog = existsSync(this.file('bank.jsonl')) ? readFileSync(this.file('bank.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as BankLogEntry) : [];
    await this.cleanup();
    const leftovers = this.lab ? await this.lab.leftovers() : [];
    const ops = pairOps(this.events, this.now());
    // every node generation's log (membership faults add n4, n5, …)
    const elections = readdirSync(this.dir)
      .filter((f) => /^n\d+\.log$/.test(f))
      .flatMap((f) => electionsInLog(f.slice(0, -4), readFileSync(this.file(f), 'utf8'), this.wallAtZero));
    const summary = check(this.opts, {
      elections,
      dir: this.dir,
      ops,
      faults: this.faults,
      resourceLog,
      accessLog,
      bankLog,
      ...(this.watcher ? { watch: this.watchRecords, watchDrained: this.watchDrained } : {}),
      runEnd,
      nodes: np,
      netnsNote: this.netnsNote,
      packetMode: this.lab ? this.lab.packetMode : 'none',
      skipped: this.skipped,
      finalOk: finalOk === true,
      leftovers,
      memberProblems: this.memberProblems,
      members: [...this.ids],
      lagSamples: this.lagSamples,
    });
    writeFileSync(this.file('summary.json'), JSON.stringify(summary, null, 2));
    writeFileSync(this.file('summary.txt'), summaryText(summary));
    writeTimeline(this.file('timeline.html'), ops, this.faults, summary);
    return summary;
  }

  /** kill every process the run started and remove its network (idempotent) */
  async cleanup(): Promise<void> {
    await Promise.all(this.helpers.map((h) => h.kill()));
    await this.nodes?.killAll();
    const problems = this.lab ? await this.lab.destroy() : [];
    for (const p of problems) this.log(`jepsen-lite: cleanup problem: ${p}`);
  }
}
