// One raftlock node, composed from its rooms: storage → core → transport → driver → the
// rooms above Raft (src/server/membership, leader, services, watch, ops) → REST. Each
// piece is made by a small builder (build-*.ts, node-*.ts); this file says in what order
// and what feeds what. Everything with a lifetime is started here and stopped by close(),
// in reverse order (node-lifecycle.ts).
import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { RaftDriver } from '../raft/driver.js';
import { Lessor, type ApplyOutput } from '../lock-fsm/index.js';
import { Metrics } from '../metrics.js';
import { resolveNode, type Config } from '../config.js';
import { setupSecurity } from '../security/node-security.js';
import { OpsTracker } from './ops/ops-tracker.js';
import { ContentionTracker } from './ops/contention-tracker.js';
import { WatchHub } from './watch/watch-hub.js';
import { currentHolders } from './watch/watch-state.js';
import type { RaftLockService } from './services/lock-service.js';
import type { Membership } from './membership/membership.js';
import { nodeEnv } from './node-env.js';
import { nodeTimeouts, tickPlan } from './timing.js';
import { openStorage, restoreApp, standingAtStart } from './build-storage.js';
import { buildDriver, buildPeerTransport, buildRawNode, type RaftParts } from './build-raft.js';
import { driverHooks } from './driver-hooks.js';
import { buildLockService, buildMembership, buildOpsProvider, type RoomParts } from './build-services.js';
import { buildApi } from './build-api.js';
import { startTicker } from './node-ticker.js';
import { closer, joinInBackground, listen } from './node-lifecycle.js';

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

export async function startNode(o: NodeOptions): Promise<RunningNode> {
  const { config, nodeId, logger } = o;
  const env = nodeEnv();
  const resolved = resolveNode(config, nodeId, o.dataDir !== undefined ? { dataDir: o.dataDir } : {});
  const nowMs = (): number => performance.now();
  const metrics = new Metrics();
  const plan = tickPlan(config);
  const timeouts = nodeTimeouts(config, plan);
  // docs/security.md: certificates, tokens, cluster secret, auth rule; fails before
  // touching the disk
  const security = await setupSecurity({ config, resolved, logger, registry: metrics.registry });
  const added = o.join === undefined ? await standingAtStart(config, nodeId, resolved, env, logger) : null;
  // --join, or added before it first started: not in the seed configuration; the first
  // state comes from the leader's snapshot
  const joining = o.join !== undefined || added !== null;
  const disk = await openStorage(config, resolved, joining, env, logger);
  const snap = disk.storage.snapshot();
  const app = restoreApp(config, snap, logger);
  // the watch feed starts where the state does: events up to the snapshot are gone, the
  // log after it is replayed through onApplied and refills the window (docs/operations.md)
  const watchHub = new WatchHub({
    retained: config.eventsRetained,
    maxStreams: config.limits.maxWatchStreams,
    appliedIndex: snap.meta.index,
    holders: (prefix) => currentHolders(app.fsm, prefix),
    onStreams: (n) => metrics.watchStreams.set(n),
  });
  const raft: RaftParts = { config, nodeId, plan, disk, snap, metrics, logger, mutations: env.mutations };
  const raw = buildRawNode(raft);
  const peers = buildPeerTransport(raft, resolved, raw, security, nowMs);
  if (env.mutations.size > 0) logger.warn({ mutations: [...env.mutations] }, 'RAFTLOCK_TEST_MUTATION: fixes switched off (test hook)');
  const lessor = new Lessor({ tickMs: plan.tickMs, ...(env.mutations.has('legacy-wait-tracking') ? { testLegacyWaitTracking: true } : {}) });
  // docs/operations.md "Status page": leader history and grant times for the status page
  const opsTracker = new OpsTracker(() => Date.now());
  const contention = new ContentionTracker(() => Date.now());
  const hooks = driverHooks({
    metrics, logger, slowMs: timeouts.slowMs, watchHub, opsTracker, contention, onFatal: o.onFatal,
    service: () => service,
    membership: () => membership,
  });
  const driver: RaftDriver<ApplyOutput> = buildDriver(raft, raw, peers.transport, app, timeouts, nowMs, hooks);
  const rooms: RoomParts = { config, nodeId, driver, app, disk, timeouts, nowMs, logger };
  const room = buildMembership(rooms, peers.http, peers.contact, joining, added);
  const membership: Membership = room.membership;
  const service: RaftLockService = buildLockService(rooms, room, lessor, metrics, security);
  const ops = buildOpsProvider(rooms, opsTracker, contention, metrics.registry);
  const server = buildApi({ config, nodeId, service, ops, watch: watchHub, metrics, security, forwardTimeoutMs: timeouts.forwardTimeoutMs, logger });
  const life = { server, driver, http: peers.http, storage: disk.storage };
  await listen(life, resolved);
  const ticker = startTicker({
    nodeId, dataDir: resolved.dataDir, tickMs: plan.tickMs, slowMs: timeouts.slowMs, electionTimeoutMaxMs: config.electionTimeoutMs.max,
    driver, raftStatus: () => raw.status(), service, membership, readiness: room.readiness, nowMs, logger, onFatal: o.onFatal,
  });
  metrics.readStateFrom({
    raft: () => ({ term: driver.currentTerm, commit: raw.status().commit, applied: driver.appliedIndex }),
    fsm: () => app.fsm.counts(),
  });
  // startupMs: since the process began (module loading, storage open, servers listening)
  logger.info({ api: resolved.node.api, peer: resolved.node.peer, dataDir: resolved.dataDir, applied: snap.meta.index, join: o.join?.url, startupMs: Math.round(performance.now()) }, 'node started');
  const joinAbort = new AbortController();
  if (o.join && membership.selfState() === 'joining') joinInBackground(o.join, resolved, membership, joinAbort.signal, logger, o.onFatal);
  const close = closer(Object.assign({}, life, { service, watchHub, ticker, joinAbort, hasPeers: () => raw.status().conf.voters.length > 1, heartbeatMs: config.heartbeatMs, logger }));
  const reloadSecurity = (): { ok: string[]; failed: string[] } => security.reload({ api: server, transport: peers.http });
  return { id: nodeId, server, driver, metrics, close, reloadSecurity };
}
