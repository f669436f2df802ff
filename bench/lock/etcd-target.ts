// etcd 3.4 under test, through its v3 JSON gateway (grpc-gateway on the client port):
// sessions are leases (/v3/lease/grant, /keepalive, /revoke), locks go through the v3lock
// service (/v3/lock/lock blocks until granted, /v3/lock/unlock deletes the owner key), and
// a linearizable read is a /v3/kv/range over the lock's key prefix. Keys are base64.
// startLocalEtcd() runs a 3-member cluster on loopback (its own temp dirs, free ports,
// default fsync behaviour) and removes it afterwards.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonHttp } from './http.js';
import { freePort, getJson, pollUntil, removeDir, startChild, stopChild, type Child } from './procs.js';
import { memberCpuSeconds, notLeader, sumMetric, type Deployment, type LockTarget, type RaftCounters } from './target.js';

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

class EtcdTarget implements LockTarget {
  readonly system = 'etcd' as const;
  readonly http: JsonHttp;

  constructor(readonly endpoint: string, connections: number) {
    this.http = new JsonHttp(endpoint, connections);
  }

  async openSession(ttlMs: number): Promise<string> {
    const r = (await this.http.call('POST', '/v3/lease/grant', { TTL: Math.ceil(ttlMs / 1000) })) as { ID: string; error?: string };
    if (!r.ID) throw new Error(`etcd lease grant: ${JSON.stringify(r).slice(0, 200)}`);
    return r.ID;
  }

  async closeSession(sessionId: string): Promise<void> {
    await this.http.call('POST', '/v3/lease/revoke', { ID: sessionId });
  }

  async keepalive(sessionId: string): Promise<void> {
    const r = (await this.http.call('POST', '/v3/lease/keepalive', { ID: sessionId })) as { result?: { TTL?: string } };
    // an expired lease answers TTL 0 (or no TTL field: zero values are omitted)
    if (!r.result?.TTL || r.result.TTL === '0') throw new Error(`etcd keepalive: lease ${sessionId} is gone`);
  }

  async acquire(name: string, sessionId: string, _waitMs: number): Promise<string> {
    // v3lock has no wait bound of its own: the request blocks until the lock is ours
    const r = (await this.http.call('POST', '/v3/lock/lock', { name: b64(name), lease: sessionId })) as { key?: string };
    if (!r.key) throw new Error(`etcd lock: ${JSON.stringify(r).slice(0, 200)}`);
    return r.key;
  }

  async release(_name: string, _sessionId: string, handle: string): Promise<void> {
    await this.http.call('POST', '/v3/lock/unlock', { key: handle });
  }

  async read(name: string): Promise<void> {
    // the owner keys are "<name>/<lease id hex>": read the whole prefix, linearizably (the default)
    await this.http.call('POST', '/v3/kv/range', { key: b64(`${name}/`), range_end: b64(`${name}0`) });
  }

  async counters(): Promise<RaftCounters | null> {
    const text = await this.http.text('/metrics');
    if (sumMetric(text, 'etcd_server_is_leader') !== 1) return null;
    return { entries: sumMetric(text, 'etcd_server_proposals_committed_total'), fsyncs: sumMetric(text, 'etcd_disk_wal_fsync_duration_seconds_count'), fsyncSeconds: sumMetric(text, 'etcd_disk_wal_fsync_duration_seconds_sum') };
  }

  async close(): Promise<void> {
    await this.http.close();
  }
}

interface EtcdStatus {
  header?: { member_id?: string };
  leader?: string;
}

async function etcdLeader(endpoints: string[]): Promise<string> {
  return pollUntil('an etcd leader', 30_000, async () => {
    for (const e of endpoints) {
      const res = await fetch(`${e}/v3/maintenance/status`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(2000) });
      const s = (await res.json()) as EtcdStatus;
      if (s.leader && s.header?.member_id === s.leader) return e;
    }
    return undefined;
  });
}

/** The etcd binary's version line, or null when there is no `etcd` on the PATH. */
export function etcdVersion(): string | null {
  try {
    return execFileSync('etcd', ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n')[0]?.trim() ?? 'etcd';
  } catch {
    return null;
  }
}

export function externalEtcd(endpoints: string[]): Deployment {
  return {
    system: 'etcd',
    hasModes: false,
    endpoints,
    description: `existing etcd ${endpoints.join(',')}`,
    leader: () => etcdLeader(endpoints),
    follower: async () => notLeader(endpoints, await etcdLeader(endpoints)),
    cpuSeconds: () => memberCpuSeconds(endpoints),
    target: (endpoint, connections) => new EtcdTarget(endpoint, connections),
    stop: async () => undefined,
  };
}

export async function startLocalEtcd(o: { members: number; log: (line: string) => void; keepDir: boolean }): Promise<Deployment> {
  const version = etcdVersion();
  if (!version) throw new Error('no `etcd` binary on the PATH (Debian: apt-get install etcd-server)');
  const dir = mkdtempSync(join(tmpdir(), 'etcd-bench-'));
  const members: { name: string; client: string; peer: string }[] = [];
  for (let i = 1; i <= o.members; i++) members.push({ name: `e${i}`, client: `http://127.0.0.1:${await freePort()}`, peer: `http://127.0.0.1:${await freePort()}` });
  const initialCluster = members.map((m) => `${m.name}=${m.peer}`).join(',');
  const children: Child[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(children.map((c) => stopChild(c)));
    if (!o.keepDir) removeDir(dir);
    else o.log(`etcd data and logs kept in ${dir}`);
  };
  try {
    for (const m of members) {
      // etcd's defaults otherwise: heartbeat 100 ms, election 1000 ms (as raftlock's
      // bench cluster), fsync of the WAL on every Ready (cannot be turned off in 3.4)
      const args = [
        '--name', m.name, '--data-dir', join(dir, m.name),
        '--listen-client-urls', m.client, '--advertise-client-urls', m.client,
        '--listen-peer-urls', m.peer, '--initial-advertise-peer-urls', m.peer,
        '--initial-cluster', initialCluster, '--initial-cluster-state', 'new', '--initial-cluster-token', `bench-${process.pid}`,
        '--logger', 'zap', '--log-outputs', 'stderr', '--log-level', 'warn',
      ];
      children.push(startChild(`etcd ${m.name}`, 'etcd', args, join(dir, `${m.name}.log`)));
    }
    const endpoints = members.map((m) => m.client);
    await pollUntil('every etcd member healthy', 60_000, async () => {
      for (const e of endpoints) if ((await getJson<{ health: string }>(`${e}/health`))?.body.health !== 'true') return undefined;
      return true;
    }, children);
    return {
      system: 'etcd',
      hasModes: false,
      endpoints,
      description: `local ${o.members}-member ${version} (logs in ${dir})`,
      leader: () => etcdLeader(endpoints),
      follower: async () => notLeader(endpoints, await etcdLeader(endpoints)),
      cpuSeconds: () => memberCpuSeconds(endpoints),
      target: (endpoint, connections) => new EtcdTarget(endpoint, connections),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
