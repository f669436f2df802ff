// A node never acts as a member of a cluster it has forgotten (docs/membership.md,
// "A node whose data directory is gone"). Two layers:
//  - at start, a node about to initialise an EMPTY data directory without --join asks
//    the other members of the cluster file whether their cluster already exists (has
//    committed anything). A brand-new cluster's first election needs every voter, so a
//    peer that has committed anything proves this node was part of it and lost its data.
//    Best effort: peers that do not answer (not started yet, unreachable, TLS with a CA we
//    cannot check) prove nothing, and the node starts.
//  - at run time, the Raft core reports 'superseded' once the log it receives binds this
//    node's id to another data directory (src/raft/core/incarnation.ts); the node stops.
// Either way it exits with one line saying what to do.
import { readdir } from 'node:fs/promises';
import { fetchClusterView } from './join.js';

export class AmnesiaError extends Error {}

/** the one line an operator sees */
export function amnesiaLine(nodeId: string, dataDir: string, evidence: string): string {
  return `raftlock: node ${nodeId} has lost its data (${evidence}), so it must not rejoin as the member it was: ` +
    `remove it (raftlock member remove ${nodeId}), wipe ${dataDir}, then start it with raftlock serve --join <api url of a member> --node ${nodeId} (docs/membership.md)`;
}

/** true when the directory does not exist or holds nothing */
export async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw err;
  }
}

export interface PeerApi {
  id: string;
  api: string;
}

/** Ask every peer at once (each bounded by timeoutMs); the first that reports a cluster
 *  that has committed something, or null. */
export async function existingCluster(peers: readonly PeerApi[], o: { timeoutMs: number; token?: string }): Promise<{ id: string; commit: number } | null> {
  const answers = await Promise.all(peers.map(async (p) => {
    try {
      const v = await fetchClusterView(p.api, { timeoutMs: o.timeoutMs, ...(o.token ? { token: o.token } : {}) });
      return v.commit_index > 0 ? { id: p.id, commit: v.commit_index } : null;
    } catch {
      return null;
    }
  }));
  return answers.find((a) => a !== null) ?? null;
}

/** `serve --join` on an empty directory: does the member at `url` list `id` as a voter
 *  already? Then this is that voter with its data lost. Best effort (null when unsure). */
export async function forgottenVoter(url: string, id: string, token?: string): Promise<string | null> {
  try {
    const v = await fetchClusterView(url, { timeoutMs: 3000, ...(token ? { token } : {}) });
    const me = v.members.find((m) => m.id === id);
    return me && (me.role === 'leader' || me.role === 'follower' || me.role === 'candidate') ? `its data directory is empty but ${url} lists ${id} as a voter of the cluster` : null;
  } catch {
    return null;
  }
}
