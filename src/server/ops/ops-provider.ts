// The node side of the operations routes (docs/operations.md): this node's observations for the
// status page, the leader's consistent backup, and the gauges the monitoring pack needs
// beyond the contract's list (computed at scrape time: no timers of their own).
import { Gauge, type Registry } from 'prom-client';
import { Failure } from '../../api/failure.js';
import type { ActivityPoint, BackupResult, ContendedLock, HeldSince, NodeObservations, OpsService } from '../../api/ops-service.js';
import type { RequestContext } from '../../api/service.js';
import { ok, refused, type Result } from '../../api/service-result.js';
import type { Index, Term } from '../../raft/core/types.js';
import type { RaftDriver } from '../../raft/driver.js';
import { encodeBackup } from './format/backup-file.js';
import { raftlockVersion } from './format/version.js';
import type { LockApp } from '../app/lock-app.js';
import type { OpsTracker } from './ops-tracker.js';
import type { ContentionTracker } from './contention-tracker.js';

export interface OpsProviderDeps {
  nodeId: string;
  clusterName: string;
  driver: RaftDriver;
  app: LockApp;
  tracker: OpsTracker;
  /** contention and grant activity for the status page (contention-tracker.ts) */
  contention?: ContentionTracker;
  /** term of a log entry still in storage (the applied one), else undefined */
  termAt(index: Index): Term | undefined;
  readTimeoutMs: number;
  wallMs(): number;
  registry: Registry;
  /** limits.max_sessions, exported so "sessions near the limit" needs no config in Prometheus */
  maxSessions: number;
}

export class OpsProvider implements OpsService {
  constructor(private readonly d: OpsProviderDeps) {
    const driver = d.driver;
    const limit = new Gauge({ name: 'raftlock_sessions_limit', help: 'limits.max_sessions of the cluster file', registers: [d.registry] });
    limit.set(d.maxSessions);
    new Gauge({
      name: 'raftlock_raft_follower_lag_entries',
      help: 'on the leader: log entries each member is behind the leader\'s last index (absent on followers)',
      labelNames: ['member'],
      registers: [d.registry],
      collect() {
        this.reset();
        const st = driver.status();
        if (st.role !== 'leader' || !st.progress) return;
        for (const [id, pr] of Object.entries(st.progress)) this.set({ member: id }, Math.max(0, st.lastIndex - pr.match));
      },
    });
  }

  observations(): NodeObservations {
    const fsm = this.d.app.fsm;
    const c = fsm.counts();
    // bound the tracker by what is actually held (it only needs current grants)
    if (this.d.tracker.trackedGrants > 2 * c.heldLocks + 1024) {
      this.d.tracker.prune((name, token) => fsm.check(name, token));
    }
    return {
      node_id: this.d.nodeId,
      node_started_at_ms: this.d.tracker.startedAtMs,
      leader_changes: this.d.tracker.leaderChanges(),
      sessions: c.sessions,
      locks_held: c.heldLocks,
      waiters: c.waiters,
      locks_in_delay: c.locksInDelay,
      last_token: fsm.lastToken,
    };
  }

  heldSince(name: string, fencingToken: number): HeldSince {
    return this.d.tracker.heldSince(name, fencingToken);
  }

  contended(limit: number): ContendedLock[] {
    return this.d.contention?.contended(this.d.app.fsm, limit) ?? [];
  }

  activity(): ActivityPoint[] {
    return this.d.contention?.activity() ?? [];
  }

  async backup(_ctx: RequestContext): Promise<Result<BackupResult>> {
    const { driver, app } = this.d;
    if (driver.currentRole !== 'leader') return refused(new Failure('unavailable', 'this node is not the leader'));
    const r = await driver.readIndex(this.d.readTimeoutMs);
    if (!r.ok) {
      if (r.reason === 'timeout') return refused(new Failure('timeout', 'could not confirm leadership with a quorum in time; nothing was saved'));
      return refused(new Failure('unavailable', 'this node is no longer the leader'));
    }
    // Everything below is synchronous: the driver applies entries only between awaits,
    // so the application state, the applied index and the membership are one moment.
    const index = driver.appliedIndex;
    const st = driver.status();
    const term = this.d.termAt(index) ?? st.term;
    const payload = app.snapshot();
    const c = app.fsm.counts();
    const members = [...app.members.values()].filter((m) => st.appliedConf.voters.includes(m.id) || st.appliedConf.learners.includes(m.id));
    const file = encodeBackup(
      {
        cluster: this.d.clusterName,
        created_at: new Date(this.d.wallMs()).toISOString(),
        source_node: this.d.nodeId,
        raftlock_version: raftlockVersion(),
        index,
        term,
        conf: { voters: [...st.appliedConf.voters], learners: [...st.appliedConf.learners] },
        members: members.map((m) => ({ id: m.id, api: m.api, peer: m.peer })),
        sessions: c.sessions,
        locks_held: c.heldLocks,
        waiters: c.waiters,
        last_token: app.fsm.lastToken,
      },
      payload,
    );
    return ok({ file, index, term });
  }
}
