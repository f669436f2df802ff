// Wire-up of one raftlock node: storage → core → transport → driver → lock service → REST.
// Everything with a lifetime is started here and stopped by close(), in reverse order.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { RawNode } from '../raft/core/raw-node.js';
import { seededRng } from '../raft/core/rng.js';
import { LevelStorage } from '../raft/storage/level-storage.js';
import { UnsyncedLossStorage } from '../raft/storage/unsynced-loss-storage.js';
import { RaftDriver } from '../raft/driver.js';
import { trace, tracing } from '../raft/trace.js';
import { HttpTransport } from '../transport/http-transport.js';
import { LogLimiter } from '../transport/log-limiter.js';
import { Lessor, type ApplyOutput } from '../lock-fsm/index.js';
import { buildServer } from '../api/server.js';
import { Metrics } from '../metrics.js';
import { resolveNode, type Config } from '../config.js';
import { LockApp } from './app/lock-app.js';
import { lockFsmOptions, testMutations } from './app/fsm-options.js';
import { RaftLockService } from './services/lock-service.js';
import { Membership } from './membership/membership.js';
import { ClusterOps } from './membership/cluster-ops.js';
import { guardEmptyLog } from './membership/join-guard.js';
import { OpsProvider } from './ops/ops-provider.js';
import { OpsTracker } from './ops/ops-tracker.js';
import { ContentionTracker } from './ops/contention-tracker.js';
import { WatchHub } from './watch/watch-hub.js';
import { currentHolders } from './watch/watch-state.js';
import { joinCluster } from './membership/join.js';
import { AmnesiaError, SupersededWatch, amnesiaLine, clusterStanding, forgottenVoter, isEmptyDir, strangerLine } from './membership/amnesia-check.js';
import { PeerContact, noteContact } from './membership/peer-contact.js';
import { Readiness } from './membership/readiness.js';
import type { MemberAddress } from './app/lock-app.js';
import type { Role } from '../raft/core/types.js';
import { setupSecurity } from '../security/node-security.js';

export interface NodeOptions {
  config: Config;
  nodeId: string;
  dataDir?: string;
  logger: Logger;
  /** called when the node must stop on its own (disk failure): fail-stop */
  onFatal: (err: unknown) => void;
  /**
   * `serve --join URL` (docs/membership.md): this node is not in the cluster's seed
   * configuration. With an empty data dir it starts with an empty conf, asks the member
   * at `url` to add it, and takes its first state from the leader's snapshot; with data
   * (a restart) it simply uses its persisted membership. `config.nodes` holds only this
   * node; a cluster file, if any, gave the cluster's name and settings.
   */
  join?: { url: string; token?: string };
}

export interface RunningNode {
  readonly id: string;
  readonly server: FastifyInstance;
  readonly driver: RaftDriver<ApplyOutput>;
  readonly metrics: Metrics;
  /** graceful stop: hand leadership over if leading, answer waiting requests, close everything */
  close(): Promise<void>;
  /** SIGHUP: re-read certificates, tokens.json and the cluster secret (docs/security.md "Reloading on SIGHUP") */
  reloadSecurity(): { ok: string[]; failed: string[] };
}

/** The strict reconfiguration check counts a voter as reachable when a message of the
 *  leader's current term came from it within this long (docs/membership.md). */
export function strictCheckWindowMs(config: Config): number {
  return Math.max(1000, 2 * config.electionTimeoutMs.max);
}

/** Raft ticks at the heartbeat interval; election timeouts are whole ticks. */
export function tickPlan(config: Config): { tickMs: number; electionTicks: number; electionTicksMax: number; heartbeatTicks: number } {
  const tickMs = config.heartbeatMs;
  const electionTicks = Math.max(2, Math.round(config.electionTimeoutMs.min / tickMs));
  // the core draws from [min, max): +1 makes the file's max itself reachable
  const electionTicksMax = Math.max(electionTicks + 1, Math.round(config.electionTimeoutMs.max / tickMs) + 1);
  return { tickMs, electionTicks, electionTicksMax, heartbeatTicks: 1 };
}

export async function startNode(o: NodeOptions): Promise<RunningNode> {
  const { config, nodeId, logger } = o;
  const resolved = resolveNode(config, nodeId, o.dataDir !== undefined ? { dataDir: o.dataDir } : {});
  const nowMs = (): number => performance.now();
  const metrics = new Metrics();
  const plan = tickPlan(config);
  /** what counts as a stall worth a log line: half the shortest election timeout */
  const slowMs = Math.max(2 * plan.tickMs, config.electionTimeoutMs.min / 2);
  // docs/security.md: certificates, tokens, cluster secret, auth rule; fails before
  // touching the disk
  const security = await setupSecurity({ config, resolved, logger, registry: metrics.registry });

  // a node about to start a blank data directory as a member of the cluster file: is that
  // cluster already running without it? (docs/membership.md, "A node whose data directory is
  // gone"). A voter there lost its data; a learner not bound yet starts as a node that joins
  // (`member add`, then start it: docs/membership.md "Add a node"); a stranger is refused.
  let added: MemberAddress[] | null = null;
  if (o.join === undefined && (await isEmptyDir(resolved.dataDir))) {
    const peers = config.nodes.filter((n) => n.id !== nodeId).map((n) => ({ id: n.id, api: n.api }));
    const found = await clusterStanding(nodeId, peers, { timeoutMs: 2000, ...(process.env.RAFTLOCK_TOKEN ? { token: process.env.RAFTLOCK_TOKEN } : {}) });
    if (found?.kind === 'voter') throw new AmnesiaError(amnesiaLine(nodeId, resolved.dataDir, `its data directory ${resolved.dataDir} is empty but ${found.id} is a member of a running cluster at commit index ${found.commit}`));
    if (found?.kind === 'stranger') throw new AmnesiaError(strangerLine(nodeId, found));
    if (found?.kind === 'learner') {
      added = found.view.members.filter((m) => m.peer !== '').map((m) => ({ id: m.id, api: m.api, peer: m.peer }));
      logger.info({ via: found.id, commit: found.commit }, 'this node was added to the running cluster as a learner and starts empty: it receives a snapshot from the leader, which promotes it once it has caught up');
    }
  }
  // --join, or added before it first started: not in the seed configuration; the first
  // state comes from the leader's snapshot
  const joining = o.join !== undefined || added !== null;
  const levelStorage = await LevelStorage.open(resolved.dataDir, {
    // the cluster file seeds a NEW cluster only; a joiner starts with no conf at all (it
    // never campaigns until a snapshot gives it one). An existing data dir keeps its own.
    seedConf: { voters: joining ? [] : config.nodes.map((n) => n.id), learners: [] },
    logger: logger.child({ component: 'storage' }),
  });
  // TEST HOOK (jepsen-lite's `unsynced` fault, docs/jepsen-lite.md "Faults"): RAFTLOCK_TEST_UNSYNCED_LOSS=1 keeps every unsynced
  // write in memory until the next synced one, so a kill -9 loses it as a power cut would.
  // Only test/jepsen-lite sets it; never set it in production.
  const storage = process.env.RAFTLOCK_TEST_UNSYNCED_LOSS === '1' ? new UnsyncedLossStorage(levelStorage) : levelStorage;
  if (storage !== levelStorage) logger.warn('RAFTLOCK_TEST_UNSYNCED_LOSS=1: unsynced writes are lost on a crash (test hook)');
  const snap = storage.snapshot();
  const app = new LockApp(
    lockFsmOptions(config),
    (index, err) => logger.error({ index, err: err.message }, 'malformed log entry applied as a no-op'),
  );
  if (snap.meta.index > 0) app.restore(snap.data, snap.meta.index);
  // the watch feed starts where the state does: events up to the snapshot are gone, the
  // log after it is replayed through onApplied and refills the window (docs/operations.md)
  const watchHub = new WatchHub({
    retained: config.eventsRetained,
    maxStreams: config.limits.maxWatchStreams,
    appliedIndex: snap.meta.index,
    holders: (prefix) => currentHolders(app.fsm, prefix),
    onStreams: (n) => metrics.watchStreams.set(n),
  });

  const rejectLog = new LogLimiter(60_000);
  // A follower's disk lost entries it had acknowledged (docs/raft-core.md "A follower whose
  // log went backwards"): the core stopped counting it and sends them again. Loud: Raft's
  // safety assumes a disk never does this, and a second member doing it before the first
  // has caught up can lose committed entries.
  const regressionFound = (follower: string, acked: number, hint: number): void => {
    metrics.raftFollowerLogRegressions.inc();
    logger.error({ follower, acknowledged: acked, logEndsAt: hint },
      `the log of ${follower} went backwards: it had acknowledged index ${acked} but now holds only up to ${hint} (its disk lost data it reported as written: check that disk). It counts for no commit and no read until it holds those entries again; they are being sent (docs/raft-core.md)`);
  };
  const raw = new RawNode(
    {
      id: nodeId,
      electionTicks: plan.electionTicks,
      electionTicksMax: plan.electionTicksMax,
      heartbeatTicks: plan.heartbeatTicks,
      rng: seededRng(randomBytes(4).readUInt32LE(0)),
      preVote: true,
      checkQuorum: true,
      maxInflight: 256,
      maxMsgBytes: 1 << 20,
      // followers learn commits with the next append or heartbeat (RaftConfig.lazyCommit)
      lazyCommit: true,
      applied: snap.meta.index,
      // docs/membership.md "Incarnations": which data directory this is
      incarnation: levelStorage.incarnation,
      // the core's trust boundary refused a peer's message (docs/raft-core.md "Bad
      // input"); the transport validates the wire first, so this is a bug or an impostor.
      // Counted (raftlock_raft_messages_refused_total); at most one log line per peer and
      // reason a minute.
      onReject: (m, why) => {
        metrics.raftMessagesRefused.labels(why.reason).inc();
        const suppressed = rejectLog.allow(`${m.from}:${why.reason}`);
        if (suppressed !== null) logger.warn({ from: String(m.from).slice(0, 128), reason: why.reason, detail: why.detail, suppressed }, 'peer message refused by the Raft core');
      },
      onLogRegression: regressionFound,
    },
    storage,
  );

  const httpTransport = new HttpTransport({
    self: nodeId,
    cluster: config.cluster,
    listen: resolved.peerListen,
    // every address this node knows (seeded or persisted) is pushed by Membership below
    peers: new Map(),
    logger: logger.child({ component: 'transport' }),
    registry: metrics.registry,
    clusterId: () => raw.clusterId(),
    ...security.transport,
  });

  // seeded nodes, and joiners once they installed a snapshot, replay the log safely
  const seeded = storage.initialState().conf.voters.length > 0;
  // when each peer was last heard from (the strict reconfiguration check, bootstrap waits)
  const contact = new PeerContact(nowMs);
  const transport = guardEmptyLog(noteContact(httpTransport, contact), () => seeded || storage.snapshot().meta.index > 0, (m) =>
    logger.debug({ from: m.from, type: m.type }, 'joining: waiting for a snapshot; appends from index 1 ignored'),
  );

  const mutations = testMutations();
  if (mutations.size > 0) logger.warn({ mutations: [...mutations] }, 'RAFTLOCK_TEST_MUTATION: fixes switched off (test hook)');
  const lessor = new Lessor({ tickMs: plan.tickMs, ...(mutations.has('legacy-wait-tracking') ? { testLegacyWaitTracking: true } : {}) });
  // The leader-side timeouts, and the relay budget derived from them: a follower relaying
  // a request waits for the leader's own longest answer time plus forwardTimeoutMs, so it
  // never reports "outcome unknown" for something the leader completes (api/forward.ts).
  const proposalTimeoutMs = Math.max(5000, 3 * config.electionTimeoutMs.max);
  const readTimeoutMs = Math.max(2000, 2 * config.electionTimeoutMs.max);
  // a plain request: at most a read barrier and a proposal on the leader, plus a margin
  const forwardTimeoutMs = proposalTimeoutMs + readTimeoutMs + 1000;
  // docs/operations.md "Status page": leader history and grant times for the status page
  const opsTracker = new OpsTracker(() => Date.now());
  const contention = new ContentionTracker(() => Date.now());
  let lastLeader: string | null = null;
  const driver: RaftDriver<ApplyOutput> = new RaftDriver({
    id: nodeId,
    raw,
    storage,
    transport,
    app,
    snapshotConf: snap.meta.conf,
    applied: snap.meta.index,
    snapshotEveryEntries: config.snapshotEveryEntries,
    proposalTimeoutMs,
    clock: { nowMs },
    autoRun: true,
    // a slow fsync must not silence a leader (docs/recovery.md); past about one maximum
    // election timeout of waiting, followers may replace it
    heartbeatCoverTicks: plan.electionTicksMax,
    hooks: {
      onPersist: (seconds, synced, entries) => {
        if (synced) metrics.storageSync.observe(seconds);
        // the driver steps nothing while a write is out: a write this slow delays heartbeats
        // and votes (docs/recovery.md)
        if (seconds * 1000 >= slowMs) logger.warn({ ms: Math.round(seconds * 1000), synced, entries }, 'slow storage write');
      },
      onRoleChange: (role: Role, leader, term) => {
        if (leader !== lastLeader) {
          if (leader !== null) metrics.raftLeaderChanges.inc();
          lastLeader = leader;
        }
        opsTracker.onLeader(leader, term);
        logger.info({ role, leader, term }, 'role changed');
        metrics.raftIsLeader.set(role === 'leader' ? 1 : 0);
        service.onRoleChange(role === 'leader');
      },
      onApplied: (entry, result) => {
        watchHub.onApplied(entry.index, result);
        service.onApplied(result);
        opsTracker.onApplied(result);
        contention.onApplied(result);
      },
      onConfApplied: (conf, cc, index) => {
        logger.info({ index, change: cc.type, node: cc.nodeId, voters: conf.voters, learners: conf.learners }, 'membership changed');
        membership.onConfApplied(cc);
      },
      onSnapshotRestored: (index) => {
        logger.info({ index }, 'installed a snapshot from the leader');
        opsTracker.onSnapshotRestored();
        contention.onSnapshotRestored();
        watchHub.onSnapshotRestored(index);
        membership.onRestored();
      },
      onCommitLatency: (s) => metrics.raftCommitLatency.observe(s),
      onFatal: (err) => {
        logger.fatal({ err: err instanceof Error ? err.message : String(err) }, 'fatal: stopping the node');
        o.onFatal(err);
      },
    },
  });

  const membership = new Membership({
    self: nodeId,
    app,
    driver: () => driver,
    transport: httpTransport,
    snapshotIndex: () => storage.snapshot().meta.index,
    promoteLagEntries: config.membership.promoteMaxLagEntries,
    catchUpTimeoutMs: config.membership.catchUpTimeoutMs,
    proposalTimeoutMs,
    contact,
    activeWindowMs: strictCheckWindowMs(config),
    joining: joining && !raw.status().conf.voters.includes(nodeId) && !raw.status().conf.learners.includes(nodeId) && storage.lastIndex() === 0,
    nowMs,
    logger: logger.child({ component: 'membership' }),
  });
  // persisted addresses (snapshot, log) win; the file only fills in a new cluster's
  if (!joining) membership.seed(config.nodes.map((n) => ({ id: n.id, api: n.api, peer: n.peer })));
  else if (added !== null) membership.learn(added);
  else membership.pushPeers();
  // docs/api.md "Readiness": what /readyz and GET /v1/cluster's not_ready say
  const readiness = new Readiness({
    self: nodeId,
    driver: () => driver,
    membership,
    contact,
    nowMs,
    applyGraceMs: Math.max(1000, 2 * config.electionTimeoutMs.max),
    learnerLagEntries: config.membership.promoteMaxLagEntries,
    heardWindowMs: Math.max(3000, 3 * config.electionTimeoutMs.max),
    logger: logger.child({ component: 'readiness' }),
  });
  const clusterOps = new ClusterOps({ nodeId, clusterName: config.cluster, driver, membership, electionTimeoutMaxMs: config.electionTimeoutMs.max, relayMarginMs: forwardTimeoutMs, nowMs, notReadyReason: () => readiness.reason() });

  const service: RaftLockService = new RaftLockService({
    nodeId,
    driver,
    app,
    lessor,
    metrics,
    session: config.session,
    membership,
    readiness,
    clusterOps,
    nowMs,
    readTimeoutMs,
    electionTimeoutMaxMs: config.electionTimeoutMs.max,
    proposalTimeoutMs,
    ...(security.mayActForOthers ? { mayActForOthers: security.mayActForOthers } : {}),
  });

  const ops = new OpsProvider({
    nodeId,
    clusterName: config.cluster,
    driver,
    app,
    tracker: opsTracker,
    contention,
    termAt: (index) => storage.term(index),
    readTimeoutMs,
    wallMs: () => Date.now(),
    registry: metrics.registry,
    maxSessions: config.limits.maxSessions,
  });

  const server = buildServer({
    service,
    ops,
    nodeId,
    metrics,
    logger: logger.child({ component: 'api' }),
    requestLogging: logger.isLevelEnabled('debug'),
    limits: { minTtlMs: config.session.minTtlMs, maxTtlMs: config.session.maxTtlMs },
    forwardTimeoutMs,
    watch: watchHub,
    ...(security.https ? { https: security.https } : {}),
    ...(security.apiClientConnect ? { apiClientConnect: security.apiClientConnect } : {}),
    ...(security.authorize ? { authorize: security.authorize } : {}),
    // the per-step trace's last server step (src/raft/trace.ts): when the answer is handed to the socket
    ...(tracing ? { onAnswer: () => trace('http_answer', '-', -1) } : {}),
  });
  security.installApiGuards(server);

  try {
    await httpTransport.start();
    await server.listen({ host: resolved.apiListen.host, port: resolved.apiListen.port });
  } catch (err) {
    // A start that fails half-way (a port in use) must not leave the peer server or the
    // LevelDB handle keeping the process alive: `serve` prints one line and must then exit.
    await server.close().catch(() => undefined);
    await driver.stop().catch(() => undefined);
    await httpTransport.close().catch(() => undefined);
    await storage.close().catch(() => undefined);
    throw err;
  }

  const updateGauges = (): void => {
    const st = driver.status();
    metrics.raftTerm.set(st.term);
    metrics.raftCommitIndex.set(st.commit);
    metrics.raftAppliedIndex.set(driver.appliedIndex);
    const c = app.fsm.counts();
    metrics.sessionsActive.set(c.sessions);
    metrics.locksHeld.set(c.heldLocks);
    metrics.lockWaiters.set(c.waiters);
    metrics.semaphoresInUse.set(c.semaphoresInUse);
    metrics.electionsLed.set(c.electionLeaders);
  };
  let lastTickAt = nowMs();
  let superseded = false;
  // one maximum election timeout: appends from a leader whose commit index lagged when it
  // sent them (a new leader before its first commit) are long through by then
  const supersededWatch = new SupersededWatch(config.electionTimeoutMs.max);
  const ticker = setInterval(() => {
    if (!superseded && supersededWatch.observe(raw.status(), nowMs())) {
      // the log binds our id to another data directory, and it holds what our leader has
      // committed: we are a member that lost its data; never go on as one (the core
      // already refuses to vote or count)
      superseded = true;
      o.onFatal(new AmnesiaError(amnesiaLine(nodeId, resolved.dataDir, `the cluster's configuration binds ${nodeId} to another data directory than ${resolved.dataDir}`)));
      return;
    }
    // a late tick means the event loop was blocked: nothing was sent or received meanwhile
    const at = nowMs();
    if (at - lastTickAt - plan.tickMs >= slowMs) logger.warn({ ms: Math.round(at - lastTickAt - plan.tickMs), role: driver.currentRole, term: driver.currentTerm }, 'event loop was blocked');
    lastTickAt = at;
    driver.tick();
    service.onTick();
    membership.onTick();
    readiness.onTick();
    updateGauges();
  }, plan.tickMs);

  // startupMs: since the process began (module loading, storage open, servers listening)
  logger.info({ api: resolved.node.api, peer: resolved.node.peer, dataDir: resolved.dataDir, applied: snap.meta.index, join: o.join?.url, startupMs: Math.round(performance.now()) }, 'node started');

  // A node started with --join and no membership yet asks to be added, in the background:
  // /healthz answers meanwhile, /readyz says "joining". A restarted member skips this.
  const joinAbort = new AbortController();
  if (o.join && membership.selfState() === 'joining') {
    const self = { id: nodeId, api: resolved.node.api, peer: resolved.node.peer };
    // an empty directory joining under the id of a current VOTER is that voter having lost
    // its data (a joiner becomes a voter only after it has caught up, so with a log): it
    // must be removed first (docs/membership.md, "A node whose data directory is gone")
    void forgottenVoter(o.join.url, nodeId, o.join.token).then((evidence) => {
      if (evidence !== null && !joinAbort.signal.aborted) o.onFatal(new AmnesiaError(amnesiaLine(nodeId, resolved.dataDir, evidence)));
    });
    joinCluster({ url: o.join.url, self, ...(o.join.token ? { token: o.join.token } : {}), learn: (ms) => membership.learn(ms), logger, signal: joinAbort.signal }).then(
      () => logger.info({ via: o.join!.url, state: membership.selfState() }, membership.selfState() === 'voter' ? 'joined the cluster as a voter' : 'joined the cluster: the leader promotes this node to voter once it has caught up'),
      (err: unknown) => {
        if (joinAbort.signal.aborted) return;
        logger.fatal({ err: (err as Error).message }, 'could not join the cluster');
        o.onFatal(err);
      },
    );
  }

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    if (closing) return closing;
    closing = (async () => {
      // A leader hands over first so the cluster does not wait out an election timeout.
      if (driver.currentRole === 'leader' && raw.status().conf.voters.length > 1) {
        try {
          const res = await service.transferLeadership(undefined, { signal: AbortSignal.timeout(2000) });
          logger.info({ to: res.leader_id }, 'handed leadership over before stopping');
          // Followers keep relaying requests here until they hear from the new leader (its
          // first append, a heartbeat or so later). Closing the API at once races those
          // relays on reused keep-alive sockets, which then answer 504 (outcome unknown).
          // Serve a little longer — as a follower now: relay onwards or answer 503 — so
          // nobody is routing to us when the sockets close.
          await new Promise((r) => setTimeout(r, Math.max(250, 4 * config.heartbeatMs)));
        } catch (err) {
          logger.warn({ err: (err as Error).message }, 'leadership transfer before stopping failed');
        }
      }
      joinAbort.abort();
      service.shutdown();
      watchHub.close();
      clearInterval(ticker);
      await server.close();
      await driver.stop({ writeCommit: true }); // a clean restart has the commit index it had
      await httpTransport.close();
      await storage.close();
      logger.info('node stopped');
    })();
    return closing;
  };

  const reloadSecurity = (): { ok: string[]; failed: string[] } => security.reload({ api: server, transport: httpTransport });
  return { id: nodeId, server, driver, metrics, close, reloadSecurity };
}
