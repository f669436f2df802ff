// The OS processes of a run: raftlock nodes (`raftlock serve`, the real bin), lock
// clients, the probe and the fenced resource — each optionally inside a network namespace.
// Kill/pause/restart verbs for the nemesis; every exit the nemesis did not cause is
// recorded (a node must never die on its own); resident memory is sampled from /proc.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, writeFileSync, type WriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { binPath } from '../support/cluster-harness.js';
import type { NetLab } from './netns.js';
import { SERVE_NODE_FLAGS, serveEnv } from '../../src/cli/serve-runtime.js';

/** the raftlock entry point the nodes run: the repo's bin, or JEPSEN_RAFTLOCK_BIN (a build of
 *  another checkout, e.g. a frozen commit while others rebuild dist/) */
const nodeBin = process.env.JEPSEN_RAFTLOCK_BIN ?? binPath;
const here = fileURLToPath(new URL('.', import.meta.url));
const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
/** argv prefix that runs a sibling module of this file (tsx when running from sources) */
export function siblingArgv(name: string): string[] {
  return [process.execPath, ...(ext === '.ts' ? ['--import', 'tsx'] : []), join(here, name + ext)];
}

export interface NodeSpec {
  id: string;
  api: string;
  peer: string;
  listenApi: string;
  listenPeer: string;
  /** the network slot it lives in: the id it was started under, or `spare` (growth) */
  slot?: string;
}

export interface UnexpectedExit {
  node: string;
  t: number;
  code: number | null;
  signal: string | null;
  logTail: string;
}

export class NodeProcs {
  private readonly procs = new Map<string, ChildProcess>();
  private readonly expecting = new Set<string>();
  private readonly paused = new Set<string>();
  private readonly logs = new Map<string, WriteStream>();
  readonly unexpected: UnexpectedExit[] = [];
  /** node → extra `serve` flags: `--join URL --api … --peer …` for a node that joined later */
  private readonly joinArgs = new Map<string, string[]>();
  /** node → its own cluster file (a node added etcd's way is in a copy that lists it) */
  private readonly configOf = new Map<string, string>();
  /** the exit of each node's current process (for callers that wait on it) */
  private readonly exits = new Map<string, Promise<{ code: number | null; signal: string | null }>>();
  /** node → [t, rss bytes] samples */
  readonly rss = new Map<string, [number, number][]>();

  constructor(
    private readonly o: {
      dir: string;
      configPath: string;
      specs: NodeSpec[];
      lab: NetLab | null;
      env: Record<string, string>;
      now: () => number;
      /** per start: more environment and node flags (the fake clocks, clock.ts) */
      perStart?: (id: string) => { env: Record<string, string>; nodeFlags: string[] };
    },
  ) {}

  get ids(): string[] {
    return this.o.specs.map((s) => s.id);
  }

  running(id: string): boolean {
    return this.procs.has(id);
  }

  isPaused(id: string): boolean {
    return this.paused.has(id);
  }

  start(id: string): void {
    if (this.procs.has(id)) throw new Error(`${id} is already running`);
    let log = this.logs.get(id);
    if (!log) {
      log = createWriteStream(join(this.o.dir, `${id}.log`), { flags: 'a' });
      this.logs.set(id, log);
    }
    const extra = this.o.perStart?.(id) ?? { env: {}, nodeFlags: [] };
    const argv = [process.execPath, ...SERVE_NODE_FLAGS, ...extra.nodeFlags, nodeBin, 'serve', '--config', this.configOf.get(id) ?? this.o.configPath, '--node', id, ...(this.joinArgs.get(id) ?? []), '--log-level', 'info'];
    const full = this.o.lab ? this.o.lab.wrap(id, argv) : argv;
    const proc = spawn(full[0]!, full.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: serveEnv({ ...process.env, ...this.o.env, ...extra.env }) });
    proc.stdout!.pipe(log, { end: false });
    proc.stderr!.pipe(log, { end: false });
    this.procs.set(id, proc);
    this.exits.set(id, new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal }))));
    proc.once('exit', (code, signal) => {
      if (this.procs.get(id) === proc) this.procs.delete(id);
      this.paused.delete(id);
      if (this.expecting.delete(id)) return;
      this.unexpected.push({ node: id, t: this.o.now(), code, signal, logTail: tail(join(this.o.dir, `${id}.log`)) });
    });
  }

  /** a node that joins a running cluster: it is not in the cluster file, so every start
   *  (also restarts after kills) names its URLs; --join is ignored once it has state */
  setJoin(id: string, joinUrl: string, api: string, peer: string): void {
    this.configOf.delete(id);
    this.joinArgs.set(id, ['--join', joinUrl, '--api', api, '--peer', peer]);
  }

  /** a node started from its own cluster file (one that lists it), without --join */
  setConfig(id: string, configPath: string): void {
    this.joinArgs.delete(id);
    this.configOf.set(id, configPath);
  }

  /** how the current process of `id` ends (undefined: none was started) */
  exitOf(id: string): Promise<{ code: number | null; signal: string | null }> | undefined {
    return this.exits.get(id);
  }

  /** the node's log file */
  logPath(id: string): string {
    return join(this.o.dir, `${id}.log`);
  }

  /** the next exit of `id` is the nemesis's doing (a removed member), not a crash;
   *  `false` withdraws that when the removal did not happen */
  expectExit(id: string, yes = true): void {
    if (yes) this.expecting.add(id);
    else this.expecting.delete(id);
  }

  /** start `id` expecting it to exit on its own (a refusal to start): resolves with how it
   *  ended, or null when it still runs after timeoutMs (its exit stays expected) */
  startExpectingExit(id: string, timeoutMs: number): Promise<{ code: number | null; signal: string | null } | null> {
    this.expecting.add(id);
    this.start(id);
    const p = this.procs.get(id)!;
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(null), timeoutMs);
      p.once('exit', (code, signal) => {
        clearTimeout(t);
        resolve({ code, signal });
      });
    });
  }

  /** kill -9 and wait for the exit */
  async kill(id: string): Promise<void> {
    const p = this.procs.get(id);
    if (!p) return;
    this.expecting.add(id);
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGKILL');
    await exited;
  }

  async killMany(ids: readonly string[]): Promise<void> {
    // all at once, as a power cut would
    await Promise.all(ids.map((id) => this.kill(id)));
  }

  pause(id: string): void {
    const p = this.procs.get(id);
    if (!p) return;
    p.kill('SIGSTOP');
    this.paused.add(id);
  }

  resume(id: string): void {
    const p = this.procs.get(id);
    if (!p) return;
    p.kill('SIGCONT');
    this.paused.delete(id);
  }

  sampleRss(): void {
    for (const [id, p] of this.procs) {
      if (p.pid === undefined) continue;
      try {
        const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.pid}/status`, 'utf8'));
        if (m) {
          const arr = this.rss.get(id) ?? [];
          arr.push([this.o.now(), Number(m[1]) * 1024]);
          this.rss.set(id, arr);
        }
      } catch {
        /* exited between the map read and the file read */
      }
    }
  }

  async killAll(): Promise<void> {
    for (const id of [...this.procs.keys()]) this.resume(id);
    await this.killMany([...this.procs.keys()]);
    for (const l of this.logs.values()) l.end();
  }
}

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** A helper process (client, probe, resource) speaking JSON lines on stdout. */
export class Helper {
  readonly proc: ChildProcess;
  private readonly waiters = new Map<number, (v: unknown) => void>();
  private nextId = 1;
  exited = false;
  readonly exitedP: Promise<void>;

  constructor(argvBase: string[], arg: unknown, lab: NetLab | null, onLine: (o: Record<string, unknown>) => void, errLog: string) {
    const argv = [...argvBase, JSON.stringify(arg)];
    const full = lab ? lab.wrap('client', argv) : argv;
    this.proc = spawn(full[0]!, full.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    const err = createWriteStream(errLog, { flags: 'a' });
    this.proc.stderr!.pipe(err);
    this.exitedP = new Promise((r) => this.proc.once('exit', () => {
      this.exited = true;
      r();
    }));
    createInterface({ input: this.proc.stdout! }).on('line', (line) => {
      if (!line.trim()) return;
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      if (typeof o.reply === 'number') {
        const w = this.waiters.get(o.reply);
        this.waiters.delete(o.reply);
        w?.(o.value);
        return;
      }
      onLine(o);
    });
  }

  send(line: string): void {
    if (!this.exited) this.proc.stdin!.write(line + '\n');
  }

  /** probe request/response over stdin/stdout */
  ask(cmd: Record<string, unknown>, timeoutMs: number): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        resolve(null);
      }, timeoutMs);
      this.waiters.set(id, (v) => {
        clearTimeout(timer);
        resolve(v);
      });
      this.send(JSON.stringify({ ...cmd, id }));
    });
  }

  pause(): void {
    if (!this.exited) this.proc.kill('SIGSTOP');
  }

  resume(): void {
    if (!this.exited) this.proc.kill('SIGCONT');
  }

  async stop(graceMs: number): Promise<void> {
    if (this.exited) return;
    this.resume();
    this.send('stop');
    this.send(JSON.stringify({ cmd: 'stop' }));
    const t = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await this.exitedP;
    clearTimeout(t);
  }

  async kill(): Promise<void> {
    if (this.exited) return;
    this.proc.kill('SIGCONT');
    this.proc.kill('SIGKILL');
    await this.exitedP;
  }
}

export function writeClusterFile(path: string, specs: NodeSpec[], dataDir: string, ttlMs: number, electionMs: [number, number], heartbeatMs: number): void {
  // Off loopback the nodes want peer authentication and an explicit word on API auth
  // (docs/security.md): peers share a secret; the API stays open for the test clients.
  const secretFile = join(dirname(path), 'cluster.secret');
  writeFileSync(secretFile, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
  const cfg = {
    cluster_secret_file: secretFile,
    auth: { disabled: true },
    cluster: 'jepsen-lite',
    nodes: specs.map((s) => ({ id: s.id, api: s.api, peer: s.peer, listen_api: s.listenApi, listen_peer: s.listenPeer })),
    data_dir: dataDir,
    election_timeout_ms: electionMs,
    heartbeat_ms: heartbeatMs,
    session: { default_ttl_ms: ttlMs, min_ttl_ms: 500, max_ttl_ms: 60_000, lock_delay_ms: 0 },
    snapshot_every_entries: 2000,
  };
  writeFileSync(path, JSON.stringify(cfg, null, 2));
}
