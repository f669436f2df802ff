// Every metric of the contract (docs/contract.md §3 "Operations"), in ONE prom-client
// Registry per node so that several nodes can live in one process (tests, the simulator)
// without sharing series. The node wiring updates the counters and histograms as things
// happen; the state gauges read the node's state when scraped (readStateFrom). The API
// scrapes `registry`.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Seconds. 100 µs … 10 s: an fsync on a good SSD is ~0.1–2 ms, a commit round on
 *  loopback ~1 ms, across a WAN tens of ms; anything over seconds is an outage. */
export const LATENCY_BUCKETS_S = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];
/** Seconds. Lock waits are bounded by wait_ms ≤ 300 s. */
export const WAIT_BUCKETS_S = [0.001, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** grant hold times: from a second to a day */
export const HOLD_BUCKETS_S = [0.1, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600];

export type ProposalResult = 'committed' | 'dropped' | 'not_leader' | 'timeout' | 'lost';
export type AcquireResult = 'acquired' | 'queued' | 'lock_held' | 'session_not_found' | 'timeout' | 'error';

/** What the state gauges read when they are scraped (Metrics.readStateFrom). */
export interface StateSource {
  raft(): { term: number; commit: number; applied: number };
  fsm(): { sessions: number; heldLocks: number; waiters: number; semaphoresInUse: number; electionLeaders: number };
}

export interface MetricsOptions {
  /** collect prom-client's default process metrics into this registry (default true) */
  defaultMetrics?: boolean;
  /** labels added to every series, e.g. { node: 'n1' } when one scrape sees several nodes */
  defaultLabels?: Record<string, string>;
}

export class Metrics {
  readonly registry: Registry;

  readonly raftTerm: Gauge;
  readonly raftIsLeader: Gauge;
  readonly raftCommitIndex: Gauge;
  readonly raftAppliedIndex: Gauge;
  readonly raftLeaderChanges: Counter;
  readonly raftProposals: Counter<'result'>;
  /** peer messages the Raft core's trust boundary refused (docs/raft-core.md "Bad input") */
  readonly raftMessagesRefused: Counter<'reason'>;
  /** on the leader: followers found to hold less than they had acknowledged (docs/api.md "Metrics") */
  readonly raftFollowerLogRegressions: Counter;
  /** propose → commit, seconds */
  readonly raftCommitLatency: Histogram;
  /** one durable LevelDB batch, seconds */
  readonly storageSync: Histogram;
  readonly sessionsActive: Gauge;
  readonly locksHeld: Gauge;
  readonly semaphoresInUse: Gauge;
  /** open GET /v1/watch streams on this node */
  readonly watchStreams: Gauge;
  /** elections with a leader (docs/api.md "Metrics"); they are locks, so also in raftlock_locks_held */
  readonly electionsLed: Gauge;
  readonly lockWaiters: Gauge;
  readonly lockAcquire: Counter<'result'>;
  /** waits refused because they would close a cycle in the wait-for graph (docs/contract.md §5) */
  readonly deadlocks: Counter;
  /** time from enqueue to grant (or give-up) of a waiting acquire, seconds */
  readonly lockWait: Histogram;
  /** how long grants (locks, shares, semaphore permits) were held, grant → release /
   *  expiry / revoke, seconds; observed by every node as it applies the end (src/server/leader/hold-timer.ts) */
  readonly lockHold: Histogram<'kind' | 'end'>;
  /** route = the route TEMPLATE (e.g. /v1/locks/{name}/acquire), never the raw URL */
  readonly httpRequestDuration: Histogram<'route' | 'method' | 'status_code'>;

  constructor(opts: MetricsOptions = {}) {
    const registers = [(this.registry = new Registry())];
    if (opts.defaultLabels) this.registry.setDefaultLabels(opts.defaultLabels);
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });

    this.raftTerm = this.stateGauge('raftlock_raft_term', 'current Raft term', (s) => s.raft().term);
    this.raftIsLeader = new Gauge({ name: 'raftlock_raft_is_leader', help: '1 if this node leads, else 0', registers });
    this.raftCommitIndex = this.stateGauge('raftlock_raft_commit_index', 'highest log index known committed', (s) => s.raft().commit);
    this.raftAppliedIndex = this.stateGauge('raftlock_raft_applied_index', 'highest log index applied to the lock state machine', (s) => s.raft().applied);
    this.raftLeaderChanges = new Counter({ name: 'raftlock_raft_leader_changes_total', help: 'times this node saw the leader change', registers });
    this.raftProposals = new Counter({ name: 'raftlock_raft_proposals_total', help: 'proposals by outcome', labelNames: ['result'], registers });
    this.raftMessagesRefused = new Counter({ name: 'raftlock_raft_messages_refused_total', help: 'peer messages the Raft core refused for breaking a protocol rule (misaddressed, bad_header, bad_field): a bug or an impostor', labelNames: ['reason'], registers });
    for (const reason of ['misaddressed', 'bad_header', 'bad_field']) this.raftMessagesRefused.labels(reason).inc(0);
    this.raftFollowerLogRegressions = new Counter({ name: 'raftlock_raft_follower_log_regressions_total', help: 'on the leader: times a follower was found holding less of the log than it had acknowledged (its disk lost data it reported written)', registers });
    this.raftCommitLatency = new Histogram({ name: 'raftlock_raft_commit_latency_seconds', help: 'propose to commit latency', buckets: LATENCY_BUCKETS_S, registers });
    this.storageSync = new Histogram({ name: 'raftlock_storage_sync_seconds', help: 'durable storage write (fsync) latency', buckets: LATENCY_BUCKETS_S, registers });
    this.sessionsActive = this.stateGauge('raftlock_sessions_active', 'open sessions', (s) => s.fsm().sessions);
    this.locksHeld = this.stateGauge('raftlock_locks_held', 'locks currently held', (s) => s.fsm().heldLocks);
    this.semaphoresInUse = this.stateGauge('raftlock_semaphores_in_use', 'semaphore permits currently held, over all semaphores', (s) => s.fsm().semaphoresInUse);
    this.watchStreams = new Gauge({ name: 'raftlock_watch_streams', help: 'open watch streams (GET /v1/watch) on this node', registers });
    this.electionsLed = this.stateGauge('raftlock_elections_led', 'elections that have a leader (each is also a held lock in raftlock_locks_held)', (s) => s.fsm().electionLeaders);
    this.lockWaiters = this.stateGauge('raftlock_lock_waiters', 'acquires waiting in lock queues', (s) => s.fsm().waiters);
    this.lockAcquire = new Counter({ name: 'raftlock_lock_acquire_total', help: 'acquire requests by outcome', labelNames: ['result'], registers });
    this.deadlocks = new Counter({ name: 'raftlock_deadlocks_total', help: 'waits refused with 409 deadlock because they would close a cycle in the wait-for graph, as this node applied them', registers });
    this.lockWait = new Histogram({ name: 'raftlock_lock_wait_seconds', help: 'time an acquire waited in the queue', buckets: WAIT_BUCKETS_S, registers });
    this.lockHold = new Histogram({ name: 'raftlock_lock_hold_seconds', help: 'how long grants were held (grant to release, expiry or revoke), as this node applied them', labelNames: ['kind', 'end'], buckets: HOLD_BUCKETS_S, registers });
    this.httpRequestDuration = new Histogram({
      name: 'raftlock_http_request_duration_seconds',
      help: 'REST request duration by route template',
      labelNames: ['route', 'method', 'status_code'],
      buckets: LATENCY_BUCKETS_S,
      registers,
    });
    // Labelled counters show up in a scrape only once a label set exists; pre-create the
    // common ones so dashboards and alerts see zeros instead of absent series.
    for (const r of ['committed', 'dropped', 'not_leader', 'timeout', 'lost'] satisfies ProposalResult[]) this.raftProposals.inc({ result: r }, 0);
    for (const r of ['acquired', 'queued', 'lock_held', 'session_not_found', 'timeout', 'error'] satisfies AcquireResult[]) this.lockAcquire.inc({ result: r }, 0);
    this.raftIsLeader.set(0);
  }

  /**
   * The state gauges (term, commit and applied index, sessions, locks, waiters, semaphore
   * permits, elections) read `source` when they are scraped, so a scrape shows the state
   * of that moment (docs/api.md "Metrics"). Until a node calls this they read 0.
   */
  readStateFrom(source: StateSource): void {
    this.stateSource = source;
  }

  private stateSource: StateSource | null = null;

  /** a gauge whose value is read from the node's state at each scrape */
  private stateGauge(name: string, help: string, read: (s: StateSource) => number): Gauge {
    // prom-client calls collect() right before it reads the gauge's value
    const gauge: Gauge = new Gauge({
      name, help, registers: [this.registry],
      collect: () => {
        if (this.stateSource !== null) gauge.set(read(this.stateSource));
      },
    });
    return gauge;
  }

  proposal(result: ProposalResult): void {
    this.raftProposals.inc({ result });
  }

  acquireOutcome(result: AcquireResult): void {
    this.lockAcquire.inc({ result });
  }

  /** Text exposition for GET /metrics. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
