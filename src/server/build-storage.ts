// A node's disk at start-up: the check that a blank data directory is not a member that
// lost its data, then the Raft log and state (LevelDB), and the application restored from
// the last snapshot.
import type { Logger } from 'pino';
import type { Config, ResolvedNode } from '../config.js';
import type { Snapshot } from '../raft/core/types.js';
import { LevelStorage } from '../raft/storage/level-storage.js';
import { UnsyncedLossStorage } from '../raft/storage/unsynced-loss-storage.js';
import { LockApp, type MemberAddress } from './app/lock-app.js';
import { lockFsmOptions } from './app/fsm-options.js';
import { AmnesiaError, amnesiaLine, clusterStanding, isEmptyDir, strangerLine } from './membership/amnesia-check.js';
import type { NodeEnv } from './node-env.js';

/**
 * A node about to start a blank data directory as a member of the cluster file: is that
 * cluster already running without it? (docs/membership.md, "A node whose data directory is
 * gone"). A voter there lost its data; a learner not bound yet starts as a node that joins
 * (`member add`, then start it: docs/membership.md "Add a node"); a stranger is refused.
 * Returns the members to learn when it was added as a learner, else null.
 */
export async function standingAtStart(config: Config, nodeId: string, resolved: ResolvedNode, env: NodeEnv, logger: Logger): Promise<MemberAddress[] | null> {
  if (!(await isEmptyDir(resolved.dataDir))) return null;
  const peers = config.nodes.filter((n) => n.id !== nodeId).map((n) => ({ id: n.id, api: n.api }));
  const found = await clusterStanding(nodeId, peers, { timeoutMs: 2000, ...(env.token ? { token: env.token } : {}) });
  if (found?.kind === 'voter') throw new AmnesiaError(amnesiaLine(nodeId, resolved.dataDir, `its data directory ${resolved.dataDir} is empty but ${found.id} is a member of a running cluster at commit index ${found.commit}`));
  if (found?.kind === 'stranger') throw new AmnesiaError(strangerLine(nodeId, found));
  if (found?.kind !== 'learner') return null;
  logger.info({ via: found.id, commit: found.commit }, 'this node was added to the running cluster as a learner and starts empty: it receives a snapshot from the leader, which promotes it once it has caught up');
  return found.view.members.filter((m) => m.peer !== '').map((m) => ({ id: m.id, api: m.api, peer: m.peer }));
}

export interface NodeDisk {
  levelStorage: LevelStorage;
  /** levelStorage, or its test twin that loses unsynced writes on a crash */
  storage: LevelStorage | UnsyncedLossStorage;
}

/** The Raft log and state; `joining`: not in the seed configuration (no conf at all). */
export async function openStorage(config: Config, resolved: ResolvedNode, joining: boolean, env: NodeEnv, logger: Logger): Promise<NodeDisk> {
  const levelStorage = await LevelStorage.open(resolved.dataDir, {
    // the cluster file seeds a NEW cluster only; a joiner starts with no conf at all (it
    // never campaigns until a snapshot gives it one). An existing data dir keeps its own.
    seedConf: { voters: joining ? [] : config.nodes.map((n) => n.id), learners: [] },
    logger: logger.child({ component: 'storage' }),
  });
  // TEST HOOK (node-env.ts): only test/jepsen-lite sets it; never set it in production.
  const storage = env.unsyncedLoss ? new UnsyncedLossStorage(levelStorage) : levelStorage;
  if (storage !== levelStorage) logger.warn('RAFTLOCK_TEST_UNSYNCED_LOSS=1: unsynced writes are lost on a crash (test hook)');
  return { levelStorage, storage };
}

/** The lock application, restored from the storage's snapshot when there is one. */
export function restoreApp(config: Config, snap: Snapshot, logger: Logger): LockApp {
  const app = new LockApp(
    lockFsmOptions(config),
    (index, err) => logger.error({ index, err: err.message }, 'malformed log entry applied as a no-op'),
  );
  if (snap.meta.index > 0) app.restore(snap.data, snap.meta.index);
  return app;
}
