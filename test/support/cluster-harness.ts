// Real raftlock processes for tests: writes a cluster file with free loopback ports into a
// temp dir, starts `raftlock serve` per node (the real bin, compiled sources), and gives
// kill/pause/restart verbs. Every process and directory it made is removed by close(),
// which tests call in `after` (also on failure).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync, createWriteStream, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

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

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface HarnessNode {
  id: string;
  api: string;
  peer: string;
  proc: ChildProcess | null;
  log: WriteStream | null;
}

export interface HarnessOptions {
  nodes?: number;
  electionTimeoutMs?: [number, number];
  heartbeatMs?: number;
  session?: { default_ttl_ms?: number; min_ttl_ms?: number; max_ttl_ms?: number; lock_delay_ms?: number };
  snapshotEveryEntries?: number;
  extraConfig?: Record<string, unknown>;
  /** extra environment for the node processes */
  env?: Record<string, string>;
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
    for (let i = 1; i <= n; i++) {
      nodes.push({ id: `n${i}`, api: `http://127.0.0.1:${await freePort()}`, peer: `http://127.0.0.1:${await freePort()}`, proc: null, log: null });
    }
    const config = {
      cluster: 'test',
      nodes: nodes.map(({ id, api, peer }) => ({ id, api, peer })),
      data_dir: join(dir, 'data'),
      election_timeout_ms: opts.electionTimeoutMs ?? [300, 600],
      heartbeat_ms: opts.heartbeatMs ?? 50,
      session: { default_ttl_ms: 10000, min_ttl_ms: 100, max_ttl_ms: 3600000, lock_delay_ms: 0, ...opts.session },
      snapshot_every_entries: opts.snapshotEveryEntries ?? 10000,
      ...opts.extraConfig,
    };
    const configPath = join(dir, 'cluster.config.json');
    writeFileSync(configPath, JSON.stringify(config, null, 2));
    const h = new ClusterHarness(dir, configPath);
    h.nodes.push(...nodes);
    h.env = opts.env ?? {};
    return h;
  }

  private env: Record<string, string> = {};

  node(id: string): HarnessNode {
    const n = this.nodes.find((x) => x.id === id);
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  get endpoints(): string[] {
    return this.nodes.map((n) => n.api);
  }

  start(id: string): void {
    const n = this.node(id);
    if (n.proc) throw new Error(`${id} already running`);
    n.log = createWriteStream(join(this.dir, `${id}.log`), { flags: 'a' });
    const proc = spawn(process.execPath, [binPath, 'serve', '--config', this.configPath, '--node', id, '--log-level', 'info'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...this.env },
    });
    proc.stdout!.pipe(n.log, { end: false });
    proc.stderr!.pipe(n.log, { end: false });
    proc.once('exit', () => {
      if (n.proc === proc) n.proc = null;
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

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON answers
  async request(id: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any; headers: Headers }> {
    const n = this.node(id);
    const res = await fetch(n.api + path, {
      method,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30000),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text.length ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON (metrics) */
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  /** The leader's id as the running nodes agree on it, polling until `timeoutMs`. */
  async waitForLeader(timeoutMs = 15000, among?: string[]): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      const ids = (among ?? this.nodes.map((n) => n.id)).filter((id) => this.node(id).proc);
      const views = await Promise.all(ids.map((id) => this.request(id, 'GET', '/v1/cluster').catch(() => null)));
      const leaders = views.filter((v) => v && v.status === 200).map((v) => v!.body.leader_id as string | null);
      const self = views.find((v) => v && v.status === 200 && v.body.role === 'leader');
      if (self && leaders.length === ids.length && leaders.every((l) => l === self.body.node_id)) return self.body.node_id as string;
      last = JSON.stringify(leaders);
      await delay(50);
    }
    throw new Error(`no agreed leader within ${timeoutMs} ms (last seen: ${last}); logs in ${this.dir}`);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.nodes.map((n) => this.signalAndWait(n.id, 'SIGKILL')));
    for (const n of this.nodes) n.log?.end();
    if (!process.env.RAFTLOCK_KEEP_TEST_DIRS) rmSync(this.dir, { recursive: true, force: true });
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Poll `fn` until it returns a truthy value or the deadline passes. */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs: number, what: string): Promise<T> {
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
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`);
}
