// A node never acts as a member of a cluster it has forgotten (docs/membership.md,
// "A node whose data directory is gone"). Two layers:
//  - at start, a node about to initialise an EMPTY data directory without --join asks
//    the other members of the cluster file whether their cluster already exists (has
//    committed anything) and what it is to them. A voter of a running cluster is bound to
//    the data directory it had (a brand-new cluster's first election needs every voter), so
//    an empty one under its id lost its data. A learner no leader has bound yet counts in
//    no quorum: it starts empty as a node that joins (etcd's order: `member add`, then start
//    it, docs/membership.md "Add a node"). An id the cluster does not know is refused: it
//    must be added first. Best effort: peers that do not answer (not started yet,
//    unreachable, TLS with a CA we cannot check) prove nothing, and the node starts.
//  - at run time, the Raft core reports 'superseded' once the log it receives binds this
//    node's id to another data directory (src/raft/core/incarnation.ts); the node stops —
//    once it holds its leader's log (SupersededWatch), not on a snapshot's configuration
//    alone, which the entries after it may have changed (a removed id added again).
// Either way it exits with one line saying what to do.
import { readdir } from 'node:fs/promises';
import type { ClusterView } from '../../api/service.js';
import type { Index, Standing } from '../../raft/core/types.js';
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

/** What the running cluster says about `self`, for a node about to start an empty data
 *  directory without --join:
 *  - null: no peer answered with a cluster that has committed anything (a new cluster);
 *  - voter: it is a voter there, so bound to a data directory it no longer has (amnesia);
 *  - learner: added and not bound yet: it may start empty, as a node that joins;
 *  - stranger: the cluster does not list it (it must be added first). */
export type ClusterStanding =
  | { kind: 'voter' | 'stranger'; id: string; commit: number; view: ClusterView }
  | { kind: 'learner'; id: string; api: string; commit: number; view: ClusterView };

/** Ask every peer at once (each bounded by timeoutMs). The leader's view decides (it
 *  answered the `member add`); without one, the view with the highest commit index. */
export async function clusterStanding(self: string, peers: readonly PeerApi[], o: { timeoutMs: number; token?: string }): Promise<ClusterStanding | null> {
  const answers = await Promise.all(peers.map(async (p) => {
    try {
      const v = await fetchClusterView(p.api, { timeoutMs: o.timeoutMs, ...(o.token ? { token: o.token } : {}) });
      return v.commit_index > 0 ? { p, v } : null;
    } catch {
      return null;
    }
  }));
  const views = answers.filter((a) => a !== null);
  if (views.length === 0) return null;
  const best = views.find((a) => a.v.role === 'leader') ?? views.reduce((a, b) => (b.v.commit_index > a.v.commit_index ? b : a));
  const me = best.v.members.find((m) => m.id === self);
  const seen = { id: best.p.id, commit: best.v.commit_index, view: best.v };
  if (me === undefined) return { kind: 'stranger', ...seen };
  if (me.role === 'learner') return { kind: 'learner', api: best.p.api, ...seen };
  return { kind: 'voter', ...seen };
}

/** The one line for an id the running cluster does not list. */
export function strangerLine(nodeId: string, s: { id: string; commit: number; view: ClusterView }): string {
  return `raftlock: node ${nodeId} is not a member of the running cluster (${s.id} at commit index ${s.commit} lists ${s.view.members.map((m) => m.id).join(', ')}): ` +
    `add it first (raftlock member add ${nodeId} --api <url> --peer <url>), then start it again, or start it with raftlock serve --join <api url of a member> (docs/membership.md)`;
}

/**
 * The run-time amnesia decision (docs/membership.md "Incarnations"). The core says
 * 'superseded' as soon as the configuration in its log binds this id to another data
 * directory, and a snapshot can say so on its own: taken before this id was removed and
 * added again, it still binds the old directory, and the removal and the new addLearner
 * follow it in the leader's log. So the node decides on the configuration it will have
 * once it holds the leader's log: superseded while its log reaches the commit index its
 * leader's appends carry, for `graceMs` on end (appends still on their way from a leader
 * whose commit index was behind when it sent them).
 */
export class SupersededWatch {
  private since: number | null = null;
  constructor(private readonly graceMs: number) {}

  /** true once this node is superseded for good */
  observe(st: { standing?: Standing; leaderCommit: Index; lastIndex: Index }, nowMs: number): boolean {
    if (st.standing !== 'superseded' || st.leaderCommit === 0 || st.lastIndex < st.leaderCommit) {
      this.since = null;
      return false;
    }
    this.since ??= nowMs;
    return nowMs - this.since >= this.graceMs;
  }
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
