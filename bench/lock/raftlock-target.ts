// raftlock under test: either a local 3-node cluster this benchmark starts itself (real
// `raftlock serve` processes from dist/, fsync on, free loopback ports, a temp data dir
// removed afterwards), or an existing cluster given by --endpoints.
import { existsSync, mkdtempSync, statSync, writeFileSync, readdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { JsonHttp } from './http.js';
import { freePort, getJson, pollUntil, removeDir, startChild, stopChild, type Child } from './procs.js';
import { memberCpuSeconds, notLeader, sumMetric, type Deployment, type LockTarget, type ModeOps, type RaftCounters } from './target.js';
import { SERVE_NODE_FLAGS, serveEnv } from '../../src/cli/serve-runtime.js';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const binPath = join(repoRoot, 'bin', 'raftlock.js');

class RaftlockTarget implements LockTarget {
  readonly system = 'raftlock' as const;
  readonly http: JsonHttp;
  readonly modes: ModeOps;

  constructor(readonly endpoint: string, connections: number) {
    this.http = new JsonHttp(endpoint, connections);
    const http = this.http;
    this.modes = {
      async acquireShared(name, sessionId, waitMs) {
        const r = (await http.call('POST', `/v1/locks/${name}/acquire`, { session_id: sessionId, mode: 'shared', ...(waitMs > 0 ? { wait_ms: waitMs } : {}) })) as { fencing_token: number };
        return String(r.fencing_token);
      },
      async acquireSemaphore(name, sessionId, limit, permits, waitMs) {
        const r = (await http.call('POST', `/v1/semaphores/${name}/acquire`, { session_id: sessionId, limit, permits, ...(waitMs > 0 ? { wait_ms: waitMs } : {}) })) as { fencing_token: number };
        return String(r.fencing_token);
      },
      async releaseSemaphore(name, sessionId) {
        await http.call('POST', `/v1/semaphores/${name}/release`, { session_id: sessionId });
      },
    };
  }

  async openSession(ttlMs: number): Promise<string> {
    const r = (await this.http.call('POST', '/v1/sessions', { ttl_ms: ttlMs })) as { session_id: string };
    return r.session_id;
  }

  async closeSession(sessionId: string): Promise<void> {
    await this.http.call('DELETE', `/v1/sessions/${sessionId}`);
  }

  async keepalive(sessionId: string): Promise<void> {
    await this.http.call('POST', `/v1/sessions/${sessionId}/keepalive`);
  }

  async acquire(name: string, sessionId: string, waitMs: number): Promise<string> {
    const r = (await this.http.call('POST', `/v1/locks/${name}/acquire`, waitMs > 0 ? { session_id: sessionId, wait_ms: waitMs } : { session_id: sessionId })) as { fencing_token: number };
    return String(r.fencing_token);
  }

  async release(name: string, sessionId: string, handle: string): Promise<void> {
    await this.http.call('POST', `/v1/locks/${name}/release`, { session_id: sessionId, fencing_token: Number(handle) });
  }

  async read(name: string): Promise<void> {
    await this.http.call('GET', `/v1/locks/${name}`);
  }

  async counters(): Promise<RaftCounters | null> {
    const [cluster, metrics] = await Promise.all([
      this.http.call('GET', '/v1/cluster') as Promise<{ commit_index: number; role: string }>,
      this.http.text('/metrics'),
    ]);
    if (cluster.role !== 'leader') return null;
    return { entries: cluster.commit_index, fsyncs: sumMetric(metrics, 'raftlock_storage_sync_seconds_count'), fsyncSeconds: sumMetric(metrics, 'raftlock_storage_sync_seconds_sum'), peerMessages: sumMetric(metrics, 'raftlock_transport_messages_sent_total') };
  }

  async close(): Promise<void> {
    await this.http.close();
  }
}

async function raftlockLeader(endpoints: string[]): Promise<string> {
  return pollUntil('a raftlock leader', 30_000, async () => {
    for (const e of endpoints) {
      const r = await getJson<{ role: string; leader_id: string | null; members: { id: string; api: string }[] }>(`${e}/v1/cluster`);
      if (r?.status !== 200 || !r.body.leader_id) continue;
      const leader = r.body.members.find((m) => m.id === r.body.leader_id);
      if (leader?.api) {
        const lr = await getJson<{ role: string }>(`${leader.api}/v1/cluster`);
        if (lr?.body.role === 'leader') return leader.api;
      }
    }
    return undefined;
  });
}

/** an existing cluster (--endpoints): nothing to start or stop */
export function externalRaftlock(endpoints: string[]): Deployment {
  return {
    system: 'raftlock',
    hasModes: true,
    endpoints,
    description: `existing cluster ${endpoints.join(',')}`,
    leader: () => raftlockLeader(endpoints),
    follower: async () => notLeader(endpoints, await raftlockLeader(endpoints)),
    cpuSeconds: () => memberCpuSeconds(endpoints),
    target: (endpoint, connections) => new RaftlockTarget(endpoint, connections),
    stop: async () => undefined,
  };
}

export interface LocalRaftlockOptions {
  nodes: number;
  /** extra node flags for every server process, e.g. --cpu-prof */
  nodeArgs: string[];
  log: (line: string) => void;
  keepDir: boolean;
  /** snapshot_every_entries (default 10000, the cluster file's default) */
  snapshotEvery?: number;
  /** extra environment for the nodes (e.g. RAFTLOCK_TRACE_DIR for --trace) */
  env?: Record<string, string>;
}

/** A local cluster: a Deployment plus verbs the scale measurement needs. */
export interface LocalRaftlock extends Deployment {
  readonly nodeIds: string[];
  api(id: string): string;
  /** bytes under the node's data directory (LevelDB files: snapshot + log tail + WAL) */
  dataDirBytes(id: string): number;
  /** SIGTERM the node, run `whileDown(dataDir)`, start it again, and return ms from the
   *  start until /readyz is 200 */
  restart(id: string, whileDown?: (dataDir: string) => Promise<void>): Promise<number>;
}

/** Start a local cluster from dist/ (fails with a clear line if it was not built). */
export async function startLocalRaftlock(o: LocalRaftlockOptions): Promise<LocalRaftlock> {
  checkBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'raftlock-bench-'));
  const nodes: { id: string; api: string; peer: string }[] = [];
  for (let i = 1; i <= o.nodes; i++) nodes.push({ id: `n${i}`, api: `http://127.0.0.1:${await freePort()}`, peer: `http://127.0.0.1:${await freePort()}` });
  const config = {
    cluster: 'bench',
    nodes,
    data_dir: join(dir, 'data'),
    election_timeout_ms: [1000, 2000],
    heartbeat_ms: 100,
    session: { default_ttl_ms: 10000, min_ttl_ms: 1000, max_ttl_ms: 3600000, lock_delay_ms: 0 },
    snapshot_every_entries: o.snapshotEvery ?? 10000,
    limits: { max_sessions: 1_000_000, max_sessions_per_token: 1_000_000, max_waiters_per_lock: 10_000, requests_per_second_per_client: 0 },
  };
  const configPath = join(dir, 'cluster.config.json');
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const children: Child[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(children.map((c) => stopChild(c)));
    if (!o.keepDir) removeDir(dir);
    else o.log(`raftlock data and logs kept in ${dir}`);
  };
  // the memory settings every launcher applies (src/cli/serve-runtime.ts)
  const spawnNode = (id: string): Child => startChild(`raftlock ${id}`, process.execPath, [...SERVE_NODE_FLAGS, ...o.nodeArgs, binPath, 'serve', '--config', configPath, '--node', id, '--log-level', 'warn'], join(dir, `${id}.log`), { ...serveEnv(), ...o.env });
  try {
    for (const n of nodes) children.push(spawnNode(n.id));
    const endpoints = nodes.map((n) => n.api);
    await pollUntil('every raftlock node ready', 60_000, async () => {
      for (const e of endpoints) if ((await getJson(`${e}/readyz`))?.status !== 200) return undefined;
      return true;
    }, children);
    return {
      system: 'raftlock',
      hasModes: true,
      endpoints,
      description: `local ${o.nodes}-node cluster (dist/, fsync on, logs in ${dir})`,
      leader: () => raftlockLeader(endpoints),
      follower: async () => notLeader(endpoints, await raftlockLeader(endpoints)),
      cpuSeconds: () => memberCpuSeconds(endpoints),
      target: (endpoint, connections) => new RaftlockTarget(endpoint, connections),
      stop,
      nodeIds: nodes.map((n) => n.id),
      api: (id) => nodes.find((n) => n.id === id)!.api,
      dataDirBytes: (id) => dirBytes(join(dir, 'data', id)),
      async restart(id, whileDown) {
        const k = nodes.findIndex((n) => n.id === id);
        await stopChild(children[k]!);
        await whileDown?.(join(dir, 'data', id));
        const t0 = performance.now();
        children[k] = spawnNode(id);
        await pollUntil(`${id} ready after restart`, 120_000, async () => ((await getJson(`${nodes[k]!.api}/readyz`))?.status === 200 ? true : undefined), [children[k]!]);
        return performance.now() - t0;
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The local cluster runs the compiled sources: refuse stale or missing ones loudly. */
function checkBuilt(): void {
  const main = join(repoRoot, 'dist', 'src', 'cli', 'main.js');
  if (!existsSync(main)) throw new Error('dist/ is missing: run `npm run build` first (npm ci does it too)');
  // tsc -b rewrites only the outputs whose sources changed, so the build's time is that of
  // the newest output, not of main.js
  const builtAt = newestMtime(join(repoRoot, 'dist', 'src'));
  const newest = newestMtime(join(repoRoot, 'src'));
  if (newest > builtAt + 1000) process.stderr.write('warning: src/ changed after dist/ was built; run `npm run build` to benchmark the current sources\n');
}

function dirBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    n += e.isDirectory() ? dirBytes(p) : statSync(p).size;
  }
  return n;
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}
