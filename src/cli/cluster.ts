// `raftlock cluster`: every node of a cluster file as child processes on this machine
// (what `npm start` runs). Each child is a real `raftlock serve`; its JSON log goes to
// <data_dir>/<id>.log so this terminal shows only what a person needs: the API URLs and
// who leads. Ctrl-C (or SIGTERM, SIGHUP) stops them all gracefully, then exits; a second
// one kills them at once. A node whose launcher is gone stops too (launcher-watch.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, fetch } from 'undici';
import type { Config } from '../config.js';
import { clientTlsOptions, loadTlsMaterial } from '../security/tls.js';
import { SERVE_NODE_FLAGS, serveEnv } from './serve-runtime.js';
import { LAUNCHER_PID_ENV } from './launcher-watch.js';

export interface ClusterLaunchNode {
  id: string;
  api: string;
}

export interface ClusterLaunchOptions {
  configPath: string;
  nodes: ClusterLaunchNode[];
  logDir: string;
  logLevel: string;
  out?: (line: string) => void;
  /** how the leader watch reaches a secured API: a member's client TLS options (the
   *  cluster's CA, a node's certificate), a bearer token (RAFTLOCK_TOKEN) when auth is on */
  watch?: { tls?: ReturnType<typeof clientTlsOptions>; token?: string; authOn?: boolean };
}

/** What the leader watch needs to reach the cluster's API as a client: what a member
 *  relaying to the leader presents (the CA, the node's certificate, issued for client use
 *  too). A bad file is left to the nodes, which refuse to start naming it. */
export function clusterWatchAccess(config: Config, env: NodeJS.ProcessEnv = process.env): NonNullable<ClusterLaunchOptions['watch']> {
  const w: NonNullable<ClusterLaunchOptions['watch']> = { authOn: config.auth !== undefined };
  if (env.RAFTLOCK_TOKEN) w.token = env.RAFTLOCK_TOKEN;
  const first = config.nodes[0];
  if (config.tls && first) {
    try {
      w.tls = clientTlsOptions(loadTlsMaterial(config.tls, first.id, 'tls'));
    } catch {
      // the nodes say what is wrong with the files
    }
  }
  return w;
}

const binPath = fileURLToPath(new URL('../../../bin/raftlock.js', import.meta.url));

export async function runCluster(opts: ClusterLaunchOptions): Promise<number> {
  const out = opts.out ?? ((l: string) => console.log(l));
  mkdirSync(opts.logDir, { recursive: true, mode: 0o700 });
  const children = new Map<string, ChildProcess>();
  let stopping = false;
  let failed = false;

  for (const n of opts.nodes) {
    const logPath = join(opts.logDir, `${n.id}.log`);
    // The node writes its JSON log straight into the file (its stdout is the file), so its
    // log does not pass through this process and outlives it: a node whose launcher was
    // killed still logs why it stops (launcher-watch.ts). Its stderr comes here, to be
    // shown, and goes into the same file (appends from both stay whole lines).
    const logFd = openSync(logPath, 'a', 0o600);
    const log = createWriteStream('', { fd: logFd }); // this process's writes, to the same descriptor
    const child = spawn(process.execPath, [...SERVE_NODE_FLAGS, binPath, 'serve', '--config', opts.configPath, '--node', n.id, '--log-level', opts.logLevel], {
      stdio: ['ignore', logFd, 'pipe'],
      env: Object.assign({}, serveEnv(), { [LAUNCHER_PID_ENV]: String(process.pid) }),
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      log.write(chunk);
      // a node that cannot start says why on stderr in one line: show it
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) out(`[${n.id}] ${line.trim()}`);
    });
    child.once('exit', (code, signal) => {
      children.delete(n.id);
      if (!stopping) {
        failed = true;
        out(`node ${n.id} exited (${signal ?? `code ${code}`}); see ${join(opts.logDir, `${n.id}.log`)}`);
        void stopAll();
      }
    });
    children.set(n.id, child);
    out(`node ${n.id}: ${n.api}  (log: ${join(opts.logDir, `${n.id}.log`)})`);
  }

  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  async function stopAll(): Promise<void> {
    if (stopping) return;
    stopping = true;
    clearInterval(watch);
    out('stopping all nodes…');
    const exits = [...children.values()].map((c) => new Promise<void>((r) => {
      c.once('exit', () => r());
      const t = setTimeout(() => c.kill('SIGKILL'), 15000);
      t.unref();
      c.kill('SIGTERM');
    }));
    await Promise.all(exits);
    resolveDone();
  }
  // The first Ctrl-C stops the nodes gracefully. A second one does not wait: it kills them
  // (a terminal also signals them itself, but a supervisor that signals only this process,
  // twice, would otherwise kill it by default and leave the nodes running).
  let signals = 0;
  let forced = false;
  const onSignal = (): void => {
    if (++signals === 1) {
      void stopAll();
      return;
    }
    if (forced) return;
    forced = true;
    out('stopping now: killing every node');
    for (const c of children.values()) c.kill('SIGKILL');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // the terminal closed: stop, as a hang-up means (by default it would kill this process
  // alone; the nodes take their own SIGHUP as a reload and would stay)
  process.on('SIGHUP', onSignal);

  // Report the leader whenever it changes, through the API as any client would (with the
  // cluster's CA, a node's certificate and the token when the API is secured).
  const w = opts.watch ?? {};
  const dispatcher = new Agent(w.tls ? { connect: w.tls } : {});
  const headers: Record<string, string> = w.token ? { authorization: `Bearer ${w.token}` } : {};
  if (w.authOn && !w.token) out('auth is on: set RAFTLOCK_TOKEN (a token with the read right) to see who leads');
  const view = async (api: string): Promise<{ leader_id: string | null; term: number } | null> => {
    try {
      const r = await fetch(`${api}/v1/cluster`, { headers, dispatcher, signal: AbortSignal.timeout(1000) });
      if (r.ok) return (await r.json()) as { leader_id: string | null; term: number };
      await r.body?.cancel();
      return null;
    } catch {
      return null;
    }
  };
  let lastLeader: string | null | undefined;
  const watch = setInterval(async () => {
    const views = await Promise.all(opts.nodes.map((n) => view(n.api)));
    const v = views.find((x) => x && x.leader_id);
    const leader = v?.leader_id ?? null;
    if (leader !== lastLeader && (leader !== null || lastLeader !== undefined)) {
      lastLeader = leader;
      out(leader ? `leader: ${leader} (term ${v!.term})` : 'no leader');
    }
  }, 250);

  await done;
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  process.off('SIGHUP', onSignal);
  await dispatcher.close();
  out(forced ? 'all nodes killed' : 'all nodes stopped');
  return failed || forced ? 1 : 0;
}
