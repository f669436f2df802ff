// `raftlock snapshot restore FILE --config … --node …` (docs/operations.md "Disaster
// recovery"): seed ONE node's empty data directory of a NEW cluster from a backup. Run it
// for every node of the new cluster file with the same backup, then start the nodes.
//
// What the seeded snapshot keeps and what it replaces:
// - the lock FSM as the backup has it: every session, lock, waiter, token and
//   idempotency key, byte for byte (unless --token-floor raises the token counter);
// - the Raft position (index, term), so the new cluster's first entry is index + 1 and
//   every new fencing token, max(index, lastToken + 1), is above every restored one;
// - membership and the address book come from the NEW cluster file: the old cluster's
//   nodes and addresses are gone (a restored node that kept them would try to reach dead
//   peers, and "persisted addresses win over the file" would never let the new ones in).
import { existsSync, readdirSync } from 'node:fs';
import { LevelStorage } from '../../raft/storage/level-storage.js';
import type { Snapshot } from '../../raft/core/types.js';
import { resolveNode, type Config } from '../../config.js';
import { LockApp } from '../app/lock-app.js';
import { lockFsmOptions } from '../app/fsm-options.js';
import { LockFsm, exportState } from '../../lock-fsm/index.js';
import { BackupFormatError, decodeBackup, type BackupMeta } from './format/backup-file.js';

/** The restore cannot go ahead as asked (the target is not a new node); nothing was written. */
export class RestoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RestoreError';
  }
}

export interface RestoreSummary {
  nodeId: string;
  dataDir: string;
  index: number;
  term: number;
  voters: string[];
  sessions: number;
  locksHeld: number;
  waiters: number;
  /** highest restored token; every new grant is above max(index, this) */
  lastToken: number;
  /** the token counter after --token-floor (equal to lastToken without it) */
  tokenCounter: number;
  sourceCluster: string;
  meta: BackupMeta;
}

/**
 * Verify a backup file and build the snapshot a node of `config` starts from. Throws
 * BackupFormatError for a damaged file or a payload this cluster cannot load (for
 * example more sessions than its limits.max_sessions).
 */
export function prepareRestore(file: Uint8Array, config: Config, o: { tokenFloor?: number } = {}): { snapshot: Snapshot; app: LockApp; meta: BackupMeta } {
  const { meta, payload } = decodeBackup(file);
  const app = new LockApp(lockFsmOptions(config), () => undefined);
  try {
    app.restore(payload, meta.index);
  } catch (err) {
    throw new BackupFormatError(`the snapshot inside does not load into this cluster: ${(err as Error).message}`);
  }
  const c = app.fsm.counts();
  if (app.fsm.lastToken !== meta.last_token || c.sessions !== meta.sessions || c.heldLocks !== meta.locks_held) {
    throw new BackupFormatError(`the snapshot disagrees with its metadata (tokens ${app.fsm.lastToken}/${meta.last_token}, sessions ${c.sessions}/${meta.sessions}, locks ${c.heldLocks}/${meta.locks_held})`);
  }
  if (o.tokenFloor !== undefined && o.tokenFloor > app.fsm.lastToken) {
    // Tokens the OLD cluster granted after this backup was taken are unknown to it; a
    // resource that saw one would refuse the restored cluster's lower tokens (safe, but
    // stuck). --token-floor lifts the counter so every new token is above the floor.
    app.fsm = LockFsm.fromState(Object.assign(exportState(app.fsm), { lastToken: o.tokenFloor }), lockFsmOptions(config));
  }
  app.members.clear();
  for (const n of config.nodes) app.members.set(n.id, { id: n.id, api: n.api, peer: n.peer });
  const snapshot: Snapshot = {
    meta: { index: meta.index, term: meta.term, conf: { voters: config.nodes.map((n) => n.id), learners: [] } },
    data: app.snapshot(),
  };
  return { snapshot, app, meta };
}

/** Seed `nodeId`'s data directory (refuses a non-empty one). */
export async function restoreNode(file: Uint8Array, config: Config, nodeId: string, o: { dataDir?: string; tokenFloor?: number } = {}): Promise<RestoreSummary> {
  const resolved = resolveNode(config, nodeId, o.dataDir !== undefined ? { dataDir: o.dataDir } : {});
  const { snapshot, app, meta } = prepareRestore(file, config, o.tokenFloor !== undefined ? { tokenFloor: o.tokenFloor } : {});
  // LevelStorage.seed refuses too; this says it in the operator's terms first
  if (existsSync(resolved.dataDir) && readdirSync(resolved.dataDir).length > 0) {
    throw new RestoreError(`${resolved.dataDir} is not empty: a restore seeds a NEW node only. Stop the node and move that directory away (keep it until the restored cluster serves), then run the restore again`);
  }
  await LevelStorage.seed(resolved.dataDir, snapshot);
  const c = app.fsm.counts();
  return {
    nodeId,
    dataDir: resolved.dataDir,
    index: meta.index,
    term: meta.term,
    voters: snapshot.meta.conf.voters,
    sessions: c.sessions,
    locksHeld: c.heldLocks,
    waiters: c.waiters,
    lastToken: meta.last_token,
    tokenCounter: app.fsm.lastToken,
    sourceCluster: meta.cluster,
    meta,
  };
}
