// The node's rooms above Raft: membership (with readiness and the cluster operations), the
// lock service the API calls, and the operations provider behind the status page.
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ApplyOutput, Lessor } from '../lock-fsm/index.js';
import type { RaftDriver } from '../raft/driver.js';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { NodeSecurity } from '../security/node-security.js';
import type { LockApp, MemberAddress } from './app/lock-app.js';
import { Membership } from './membership/membership.js';
import { ClusterOps } from './membership/cluster-ops.js';
import { Readiness } from './membership/readiness.js';
import type { PeerContact } from './membership/peer-contact.js';
import { RaftLockService } from './services/lock-service.js';
import { OpsProvider } from './ops/ops-provider.js';
import type { OpsTracker } from './ops/ops-tracker.js';
import type { ContentionTracker } from './ops/contention-tracker.js';
import type { HttpTransport } from '../transport/http-transport.js';
import type { NodeDisk } from './build-storage.js';
import { strictCheckWindowMs, type NodeTimeouts } from './timing.js';

export interface RoomParts {
  config: Config;
  nodeId: string;
  driver: RaftDriver<ApplyOutput>;
  app: LockApp;
  disk: NodeDisk;
  timeouts: NodeTimeouts;
  nowMs: () => number;
  logger: Logger;
}

export interface MembershipRoom {
  membership: Membership;
  readiness: Readiness;
  clusterOps: ClusterOps;
}

/** `joining` and `added` as startNode found them (build-storage.ts standingAtStart). */
export function buildMembership(p: RoomParts, http: HttpTransport, contact: PeerContact, joining: boolean, added: MemberAddress[] | null): MembershipRoom {
  const { config, nodeId, driver, disk: { storage }, timeouts, nowMs, logger } = p;
  const conf = driver.status().conf;
  const membership = new Membership({
    self: nodeId,
    app: p.app,
    driver: () => driver,
    transport: http,
    snapshotIndex: () => storage.snapshot().meta.index,
    promoteLagEntries: config.membership.promoteMaxLagEntries,
    catchUpTimeoutMs: config.membership.catchUpTimeoutMs,
    proposalTimeoutMs: timeouts.proposalTimeoutMs,
    contact,
    activeWindowMs: strictCheckWindowMs(config),
    joining: joining && !conf.voters.includes(nodeId) && !conf.learners.includes(nodeId) && storage.lastIndex() === 0,
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
  const clusterOps = new ClusterOps({ nodeId, clusterName: config.cluster, driver, membership, electionTimeoutMaxMs: config.electionTimeoutMs.max, relayMarginMs: timeouts.forwardTimeoutMs, nowMs, notReadyReason: () => readiness.reason() });
  return { membership, readiness, clusterOps };
}

export function buildLockService(p: RoomParts, room: MembershipRoom, lessor: Lessor, metrics: Metrics, security: NodeSecurity): RaftLockService {
  const { config, timeouts } = p;
  return new RaftLockService({
    nodeId: p.nodeId,
    driver: p.driver,
    app: p.app,
    lessor,
    metrics,
    session: config.session,
    membership: room.membership,
    readiness: room.readiness,
    clusterOps: room.clusterOps,
    nowMs: p.nowMs,
    readTimeoutMs: timeouts.readTimeoutMs,
    electionTimeoutMaxMs: config.electionTimeoutMs.max,
    proposalTimeoutMs: timeouts.proposalTimeoutMs,
    ...(security.mayActForOthers ? { mayActForOthers: security.mayActForOthers } : {}),
  });
}

export function buildOpsProvider(p: RoomParts, tracker: OpsTracker, contention: ContentionTracker, registry: Registry): OpsProvider {
  return new OpsProvider({
    nodeId: p.nodeId,
    clusterName: p.config.cluster,
    driver: p.driver,
    app: p.app,
    tracker,
    contention,
    termAt: (index) => p.disk.storage.term(index),
    readTimeoutMs: p.timeouts.readTimeoutMs,
    wallMs: () => Date.now(),
    registry,
    maxSessions: p.config.limits.maxSessions,
  });
}
