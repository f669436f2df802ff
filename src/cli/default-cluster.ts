// `raftlock cluster` in a directory without a cluster file (an application that just
// installed raftlock: `npx raftlock cluster`) writes this one, the same 3-node local
// cluster as the repository's cluster.config.json (`npm start`), and runs it. An existing
// file, or one named with --config, is never written.
import { writeFileSync } from 'node:fs';

export const DEFAULT_CLUSTER_FILE = {
  cluster: 'local',
  nodes: [
    { id: 'n1', api: 'http://127.0.0.1:7001', peer: 'http://127.0.0.1:7101' },
    { id: 'n2', api: 'http://127.0.0.1:7002', peer: 'http://127.0.0.1:7102' },
    { id: 'n3', api: 'http://127.0.0.1:7003', peer: 'http://127.0.0.1:7103' },
  ],
  data_dir: './data',
  election_timeout_ms: [1000, 2000],
  heartbeat_ms: 100,
  session: { default_ttl_ms: 10000, min_ttl_ms: 1000, max_ttl_ms: 3600000, lock_delay_ms: 0 },
  snapshot_every_entries: 10000,
} as const;

/** Writes the default cluster file at `path` unless something exists there; true if it wrote. */
export function writeDefaultClusterFile(path: string): boolean {
  try {
    writeFileSync(path, `${JSON.stringify(DEFAULT_CLUSTER_FILE, null, 2)}\n`, { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}
