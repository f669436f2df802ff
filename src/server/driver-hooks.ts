// What the driver's events feed in one node: metrics and log lines, the watch feed, the
// services, the status page's trackers and membership. The services and membership are
// built after the driver (they need it), so they are reached through getters: startNode
// builds them in the same synchronous stretch as the driver, before any hook can run.
import type { Logger } from 'pino';
import type { Role } from '../raft/core/types.js';
import type { DriverHooks } from '../raft/driver.js';
import type { ApplyOutput } from '../lock-fsm/index.js';
import type { Metrics } from '../metrics.js';
import type { Membership } from './membership/membership.js';
import type { OpsTracker } from './ops/ops-tracker.js';
import type { ContentionTracker } from './ops/contention-tracker.js';
import type { WatchHub } from './watch/watch-hub.js';
import type { RaftLockService } from './services/lock-service.js';

export interface HookTargets {
  metrics: Metrics;
  logger: Logger;
  /** a storage write this slow gets a log line (timing.ts) */
  slowMs: number;
  watchHub: WatchHub;
  opsTracker: OpsTracker;
  contention: ContentionTracker;
  service: () => RaftLockService;
  membership: () => Membership;
  onFatal: (err: unknown) => void;
}

export function driverHooks(t: HookTargets): DriverHooks<ApplyOutput> {
  const { metrics, logger } = t;
  let lastLeader: string | null = null;
  return {
    onPersist: (seconds, synced, entries) => {
      if (synced) metrics.storageSync.observe(seconds);
      // the driver steps nothing while a write is out: a write this slow delays heartbeats
      // and votes (docs/recovery.md)
      if (seconds * 1000 >= t.slowMs) logger.warn({ ms: Math.round(seconds * 1000), synced, entries }, 'slow storage write');
    },
    onRoleChange: (role: Role, leader, term) => {
      if (leader !== lastLeader) {
        if (leader !== null) metrics.raftLeaderChanges.inc();
        lastLeader = leader;
      }
      t.opsTracker.onLeader(leader, term);
      logger.info({ role, leader, term }, 'role changed');
      metrics.raftIsLeader.set(role === 'leader' ? 1 : 0);
      t.service().onRoleChange(role === 'leader');
    },
    onApplied: (entry, result) => {
      t.watchHub.onApplied(entry.index, result);
      t.service().onApplied(result);
      t.opsTracker.onApplied(result);
      t.contention.onApplied(result);
    },
    onConfApplied: (conf, cc, index) => {
      logger.info({ index, change: cc.type, node: cc.nodeId, voters: conf.voters, learners: conf.learners }, 'membership changed');
      t.membership().onConfApplied(cc);
    },
    onSnapshotRestored: (index) => {
      logger.info({ index }, 'installed a snapshot from the leader');
      t.opsTracker.onSnapshotRestored();
      t.contention.onSnapshotRestored();
      t.watchHub.onSnapshotRestored(index);
      t.membership().onRestored();
    },
    onCommitLatency: (s) => metrics.raftCommitLatency.observe(s),
    onFatal: (err) => {
      logger.fatal({ err: err instanceof Error ? err.message : String(err) }, 'fatal: stopping the node');
      t.onFatal(err);
    },
  };
}
