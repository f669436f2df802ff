// Real raftlock processes for tests: writes a cluster file with free loopback ports into a
// temp dir, starts `raftlock serve` per node (the real bin, compiled sources), and gives
// kill/pause/restart verbs. Every process and directory it made is removed by close(),
// which tests call in `after` (also on failure).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, createWriteStream, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { freePort } from './ports.js';
import { fileURLToPath } from 'node:url';
import { Agent, fetch as undiciFetch } from 'undici';
import { SERVE_NODE_FLAGS, serveEnv } from '../../src/cli/serve-runtime.js';
import { trackChild, untrackChild } from './scratch-server.js';

/** the package root, whether this file runs from dist/test/support or test/support (tsx) */
export const repoRoot = findRepoRoot(dirname(fileURLToPath(import.meta.url)));
/** the real CLI entry point; it runs the compiled sources in dist/ */
export const binPath = join(repoRoot, 'bin', 'raftlock.js');

function findRepoRoot(dir: string): string {
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    if (existsSync(join(d, 'package.json')) && existsSync(join(d, 'bin', 'raftlock.js'))) return d;
  }
  throw new Error(`no raftlock package root above ${dir}`);
}

export { freePort };

export interface HarnessNode {
  id: string;
  api: string;
  peer: string;
  proc: ChildProcess | null;
  log: WriteStream | null;
  /** how the last process of this node ended (null while it runs or before it first ran) */
  lastExit: { code: number | null; signal: NodeJS.Signals | null } | null;
  /** set for nodes made by addNode(): not in the cluster file; started with `serve --join <this API URL>` */
  joinVia?: string;
}

/** A node's answer to GET /v1/cluster (docs/contract.md §3 "Operations"). */
export interface ClusterViewBody {
  node_id: string;
  role: string;
  term: number;
  leader_id: string | null;
  commit_index: number;
  applied_index: number;
  members: { id: string; api: string; peer: string; role?: string; match_index?: number; lag?: number }[];
  /** present while the node is not ready: the reason its /readyz gives */
  not_ready?: string;
}

export interface HarnessResponse {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON answers
  body: any;
  headers: Headers;
  /** the body as received */
  text: string;
}

export interface HarnessOptions {
  nodes?: number;
  electionTimeoutMs?: [number, number];
  heartbeatMs?: number;
  session?: { default_ttl_ms?: number; min_ttl_ms?: number; max_ttl_ms?: number; lock_delay_ms?: number };
  snapshotEveryEntries?: number;
  /** more top-level fields of the cluster file; a function gets the harness's temp dir
   *  first (to create certificates or token files there, removed by close()) */
  extraConfig?: Record<string, unknown> | ((dir: string) => Record<string, unknown>);
  /** extra environment for the node processes */
  env?: Record<string, string>;
  /** docs/security.md: https:// API and/or peer URLs (the config's tls / peer_tls blocks come from extraConfig) */
  apiScheme?: 'http' | 'https';
  peerScheme?: 'http' | 'https';
  /** TLS for the harness's own requests (https APIs): CA to trust, client certificate */
  clientTls?: (dir: string) => { ca?: Buffer; cert?: Buffer; key?: Buffer };
  /** headers sent with every harness request (e.g. an Authorization bearer token) */
  headers?: Record<string, string>;
}

export class ClusterHarness {
  readonly dir: string;
  readonly configPath: string;
  readonly nodes: HarnessNode[] = [];
  private closed = false;

  private constructor(dir: string, configPath: string) {
    this.dir = dir;
    this.configPath = configPath;
  }

  static async create(opts: HarnessOptions = {}): Promise<ClusterHarness> {
    const n = opts.nodes ?? 3;
    const dir = mkdtempSync(join(tmpdir(), 'raftlock-test-'));
    const nodes: HarnessNode[] = [];
    const apiScheme = opts.apiScheme ?? 'http';
    const peerScheme = opts.peerScheme ?? 'http';
    for (let i = 1; i <= n; i++) {
      nodes.push({ id: `n${i}`, api: `${apiScheme}://127.0.0.1:${await freePort()}`, peer: `${peerScheme}://127.0.0.1:${await freePort()}`, proc: null, log: null, lastExit: null });
    }
    const extra = typeof opts.extraConfig === 'function' ? opts.extraConfig(dir) : opts.extraConfig;
    const config = {
      cluster: 'test',
      nodes: nodes.map(({ id, api, peer }) => ({ id, api, peer })),
      data_dir: join(dir, 'data'),
      election_timeout_ms: opts.electionTimeoutMs ?? [300, 600],
      heartbeat_ms: opts.heartbeatMs ?? 50,
      session: { default_ttl_ms: 10000, min_ttl_ms: 100, max_ttl_ms: 3600000, lock_delay_ms: 0, ...opts.session },
      snapshot_every_entries: opts.snapshotEveryEntries ?? 10000,
      ...extra,
    };
    const configPath = join(dir, 'cluster.config.json');
    writeFileSync(configPath, JSON.stringify(config, null, 2));
    const h = new ClusterHarness(dir, configPath);
    h.nodes.push(...nodes);
    h.env = opts.env ?? {};
    h.defaultHeaders = opts.headers ?? {};
    if (opts.clientTls) h.dispatcher = new Agent({ connect: opts.clientTls(dir) });
    return h;
  }

  private env: Record<string, string> = {};
  private defaultHeaders: Record<string, string> = {};
  /** undici dispatcher with the client TLS options, when given */
  private dispatcher: Agent | null = null;

  node(id: string): HarnessNode {
    const n = this.nodes.find((x) => x.id === id);
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  get endpoints(): string[] {
    return this.nodes.map((n) => n.api);
  }

  /**
   * A new node that is NOT in the cluster file (fresh ports, empty data dir under this
   * harness's dir). start(id) then runs `serve --join <via's API> --api … --peer …` with the
   * cluster file for the cluster's name and timeouts (docs/membership.md). Its membership
   * comes from the cluster; a restart uses its persisted state.
   */
  async addNode(id: string, via: string): Promise<HarnessNode> {
    if (this.nodes.some((x) => x.id === id)) throw new Error(`node ${id} exists already`);
    const n: HarnessNode = { id, api: `http://127.0.0.1:${await freePort()}`, peer: `http://127.0.0.1:${await freePort()}`, proc: null, log: null, lastExit: null, joinVia: this.node(via).api };
    this.nodes.push(n);
    return n;
  }

  /**
   * A new node that IS in the cluster file: the file is rewritten with it added (the
   * running nodes read it only at start). start(id) then runs plain `serve --config FILE
   * --node id`, as an operator does after `member add` (docs/membership.md "Add a node").
   */
  async addToFile(id: string): Promise<HarnessNode> {
    if (this.nodes.some((x) => x.id === id)) throw new Error(`node ${id} exists already`);
    const n: HarnessNode = { id, api: `http://127.0.0.1:${await freePort()}`, peer: `http://127.0.0.1:${await freePort()}`, proc: null, log: null, lastExit: null };
    this.nodes.push(n);
    const config = JSON.parse(readFileSync(this.configPath, 'utf8')) as { nodes: { id: string; api: string; peer: string }[] };
    config.nodes.push({ id: n.id, api: n.api, peer: n.peer });
    writeFileSync(this.configPath, JSON.stringify(config, null, 2));
    return n;
  }

  start(id: string): void {
    const n = this.node(id);
    if (n.proc) throw new Error(`${id} already running`);
    n.log = createWriteStream(join(this.dir, `${id}.log`), { flags: 'a' });
    const joinArgs = n.joinVia ? ['--join', n.joinVia, '--api', n.api, '--peer', n.peer, '--data-dir', join(this.dir, 'data', id)] : [];
    const proc = spawn(process.execPath, [...SERVE_NODE_FLAGS, binPath, 'serve', '--config', this.configPath, '--node', id, '--log-level', 'info', ...joinArgs], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: serveEnv({ ...process.env, ...this.env }),
    });
    proc.stdout!.pipe(n.log, { end: false });
    proc.stderr!.pipe(n.log, { end: false });
    n.lastExit = null;
    trackChild(proc); // killed if the test process exits without close() (scratch-server.ts)
    proc.once('exit', (code, signal) => {
      untrackChild(proc);
      if (n.proc === proc) {
        n.proc = null;
        n.lastExit = { code, signal };
      }
    });
    n.proc = proc;
  }

  startAll(): void {
    for (const n of this.nodes) this.start(n.id);
  }

  /** SIGKILL: the process dies with no chance to flush or close anything */
  async kill(id: string): Promise<void> {
    await this.signalAndWait(id, 'SIGKILL');
  }

  /** SIGTERM: graceful stop */
  async stop(id: string, timeoutMs = 15000): Promise<number | null> {
    return this.signalAndWait(id, 'SIGTERM', timeoutMs);
  }

  /** ids of the nodes whose process is running */
  get running(): string[] {
    return this.nodes.filter((n) => n.proc).map((n) => n.id);
  }

  /** Wait for a node's process to end on its own; its exit code, or the signal's name. */
  async waitForExit(id: string, timeoutMs = 15000): Promise<number | NodeJS.Signals | null> {
    const n = this.node(id);
    const proc = n.proc;
    if (!proc) return n.lastExit ? (n.lastExit.code ?? n.lastExit.signal) : null;
    const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${id} still running after ${timeoutMs} ms; log in ${this.dir}`)), timeoutMs);
    });
    try {
      const e = await Promise.race([ended, timeout]);
      return e.code ?? e.signal;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Everything the node's processes wrote so far (JSON log lines, stderr). */
  logText(id: string): string {
    const p = join(this.dir, `${id}.log`);
    return existsSync(p) ? readFileSync(p, 'utf8') : '';
  }

  /** GET /v1/cluster on one node. */
  async view(id: string): Promise<ClusterViewBody> {
    const r = await this.request(id, 'GET', '/v1/cluster');
    if (r.status !== 200) throw new Error(`GET /v1/cluster on ${id}: ${r.status} ${r.text.slice(0, 200)}`);
    return r.body as ClusterViewBody;
  }

  /** Poll until every node in `ids` (default: the running ones) has applied through `index`. */
  async waitForApplied(index: number, ids?: string[], timeoutMs = 30000): Promise<void> {
    const want = ids ?? this.running;
    await eventually(async () => {
      const views = await Promise.all(want.map((id) => this.view(id)));
      return views.every((v) => v.applied_index >= index);
    }, timeoutMs, `${want.join(',')} to apply through index ${index}`);
  }

  /** send a signal to a node's process (e.g. SIGHUP: reload certificates and tokens) */
  signal(id: string, sig: NodeJS.Signals): void {
    this.node(id).proc?.kill(sig);
  }

  pause(id: string): void {
    this.node(id).proc?.kill('SIGSTOP');
  }

  resume(id: string): void {
    this.node(id).proc?.kill('SIGCONT');
  }

  private async signalAndWait(id: string, sig: NodeJS.Signals, timeoutMs = 15000): Promise<number | null> {
    const n = this.node(id);
    const proc = n.proc;
    if (!proc) return null;
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    proc.kill('SIGCONT');
    proc.kill(sig);
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    const code = await exited;
    clearTimeout(timer);
    n.proc = null;
    return code;
  }

  /** A JSON request to one node's API (the body, if any, is sent as application/json). */
  async request(id: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HarnessResponse> {
    return this.requestRaw(id, method, path, body === undefined ? undefined : JSON.stringify(body), body === undefined ? headers : { 'content-type': 'application/json', ...headers });
  }

  /** A request with exactly these bytes and headers (for malformed input). */
  async requestRaw(id: string, method: string, path: string, body: string | Uint8Array | undefined, headers: Record<string, string> = {}, timeoutMs = 30000): Promise<HarnessResponse> {
    const n = this.node(id);
    const all = { ...this.defaultHeaders, ...headers };
    const res = this.dispatcher
      ? await undiciFetch(n.api + path, { method, headers: all, body: body ?? null, signal: AbortSignal.timeout(timeoutMs), dispatcher: this.dispatcher })
      : await fetch(n.api + path, { method, headers: all, body, signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text.length ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON (metrics) */
    }
    return { status: res.status, body: parsed, headers: res.headers, text };
  }

  /** The leader's id as the running nodes agree on it, polling until `timeoutMs`. */
  async waitForLeader(timeoutMs = 30000, among?: string[]): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      const ids = (among ?? this.nodes.map((n) => n.id)).filter((id) => this.node(id).proc);
      const views = await Promise.all(ids.map((id) => this.request(id, 'GET', '/v1/cluster').catch(() => null)));
      const leaders = views.filter((v) => v && v.status === 200).map((v) => v!.body.leader_id as string | null);
      const self = views.find((v) => v && v.status === 200 && v.body.role === 'leader');
      if (self && leaders.length === ids.length && leaders.every((l) => l === self.body.node_id)) return self.body.node_id as string;
      last = JSON.stringify(leaders);
      const exited = (among ?? this.nodes.map((n) => n.id)).filter((id) => !this.node(id).proc && this.node(id).lastExit);
      if (ids.length === 0 && exited.length > 0) throw new Error(`no node is running: ${this.exitReport(exited)}`);
      await delay(50);
    }
    throw new Error(`no agreed leader within ${timeoutMs} ms (last seen: ${last}); ${this.exitReport(this.nodes.map((n) => n.id))}`);
  }

  /** how each node ended (or that it runs) and the tail of its log, for failure messages
   *  (the test directory, logs included, is removed by close()) */
  private exitReport(ids: string[]): string {
    return ids
      .map((id) => {
        const n = this.node(id);
        const state = n.proc ? 'running' : n.lastExit ? `exited (${n.lastExit.code ?? n.lastExit.signal})` : 'not started';
        const tail = this.logText(id).trimEnd().split('\n').slice(-4).map((l) => `    ${l.slice(0, 400)}`).join('\n');
        return `\n  ${id} ${state}; last log lines:\n${tail}`;
      })
      .join('');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.nodes.map((n) => this.signalAndWait(n.id, 'SIGKILL')));
    for (const n of this.nodes) n.log?.end();
    await this.dispatcher?.close().catch(() => undefined);
    if (!process.env.RAFTLOCK_KEEP_TEST_DIRS) rmSync(this.dir, { recursive: true, force: true });
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Poll `fn` until it returns a truthy value or the deadline passes. `what` may be a
 *  function, for a message that shows the state at the deadline, not at the call. */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs: number, what: string | (() => string)): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown = null;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    await delay(25);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}${lastErr ? `: ${String(lastErr)}` : ''}`);
}
