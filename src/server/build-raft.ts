// A node's Raft: the core (RawNode), the peer transport and the driver that runs them
// (docs/raft-core.md, docs/transport.md). The driver's hooks are the composition's: it
// passes what each event feeds (compose.ts).
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { RawNode } from '../raft/core/raw-node.js';
import { seededRng } from '../raft/core/rng.js';
import type { Snapshot } from '../raft/core/types.js';
import { RaftDriver, type DriverHooks } from '../raft/driver.js';
import type { Transport } from '../raft/seams.js';
import { HttpTransport } from '../transport/http-transport.js';
import { LogLimiter } from '../transport/log-limiter.js';
import type { ApplyOutput } from '../lock-fsm/index.js';
import type { Config, ResolvedNode } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { NodeSecurity } from '../security/node-security.js';
import type { LockApp } from './app/lock-app.js';
import { guardEmptyLog } from './membership/join-guard.js';
import { PeerContact, noteContact } from './membership/peer-contact.js';
import type { NodeDisk } from './build-storage.js';
import type { NodeTimeouts, TickPlan } from './timing.js';

export interface RaftParts {
  config: Config;
  nodeId: string;
  plan: TickPlan;
  disk: NodeDisk;
  snap: Snapshot;
  metrics: Metrics;
  logger: Logger;
  /** TEST HOOK: RAFTLOCK_TEST_MUTATION (node-env.ts); `count-unsynced-self` is the core's
   *  RaftConfig.testOnlyCountUnsyncedSelf, etcd 3.4's commit rule, for jepsen-lite and the
   *  bench (BENCHMARKS.md "Ninth round") */
  mutations?: ReadonlySet<string>;
}

export function buildRawNode(p: RaftParts): RawNode {
  const { metrics, logger } = p;
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
  return new RawNode(
    {
      id: p.nodeId,
      electionTicks: p.plan.electionTicks,
      electionTicksMax: p.plan.electionTicksMax,
      heartbeatTicks: p.plan.heartbeatTicks,
      rng: seededRng(randomBytes(4).readUInt32LE(0)),
      preVote: true,
      checkQuorum: true,
      maxInflight: 256,
      maxMsgBytes: 1 << 20,
      // followers learn commits with the next append or heartbeat (RaftConfig.lazyCommit)
      lazyCommit: true,
      applied: p.snap.meta.index,
      // docs/membership.md "Incarnations": which data directory this is
      incarnation: p.disk.levelStorage.incarnation,
      // the core's trust boundary refused a peer's message (docs/raft-core.md "Bad
      // input"); the wire checks only shapes, so every protocol rule a peer breaks ends
      // here (a bug or an impostor: docs/transport.md). Counted (raftlock_raft_messages_refused_total); at most one log line per peer and
      // reason a minute.
      onReject: (m, why) => {
        metrics.raftMessagesRefused.labels(why.reason).inc();
        const suppressed = rejectLog.allow(`${m.from}:${why.reason}`);
        if (suppressed !== null) logger.warn({ from: String(m.from).slice(0, 128), reason: why.reason, detail: why.detail, suppressed }, 'peer message refused by the Raft core');
      },
      onLogRegression: regressionFound,
      ...(p.mutations?.has('count-unsynced-self') === true ? { testOnlyCountUnsyncedSelf: true } : {}),
    },
    p.disk.storage,
  );
}

export interface PeerTransport {
  /** the HTTP transport itself (started, closed, reloaded and given peers by the node) */
  http: HttpTransport;
  /** what the driver sends and receives through: contact noted, joiners guarded */
  transport: Transport;
  /** when each peer was last heard from (the strict reconfiguration check, bootstrap waits) */
  contact: PeerContact;
}

export function buildPeerTransport(p: RaftParts, resolved: ResolvedNode, raw: RawNode, security: NodeSecurity, nowMs: () => number): PeerTransport {
  const { storage } = p.disk;
  const http = new HttpTransport({
    self: p.nodeId,
    cluster: p.config.cluster,
    listen: resolved.peerListen,
    // every address this node knows (seeded or persisted) is pushed by Membership
    peers: new Map(),
    logger: p.logger.child({ component: 'transport' }),
    registry: p.metrics.registry,
    clusterId: () => raw.clusterId(),
    ...security.transport,
  });
  // seeded nodes, and joiners once they installed a snapshot, replay the log safely
  const seeded = storage.initialState().conf.voters.length > 0;
  const contact = new PeerContact(nowMs);
  const transport = guardEmptyLog(noteContact(http, contact), () => seeded || storage.snapshot().meta.index > 0, (m) =>
    p.logger.debug({ from: m.from, type: m.type }, 'joining: waiting for a snapshot; appends from index 1 ignored'),
  );
  return { http, transport, contact };
}

export function buildDriver(p: RaftParts, raw: RawNode, transport: Transport, app: LockApp, timeouts: NodeTimeouts, nowMs: () => number, hooks: DriverHooks<ApplyOutput>): RaftDriver<ApplyOutput> {
  return new RaftDriver({
    id: p.nodeId,
    raw,
    storage: p.disk.storage,
    transport,
    app,
    snapshotConf: p.snap.meta.conf,
    applied: p.snap.meta.index,
    snapshotEveryEntries: p.config.snapshotEveryEntries,
    proposalTimeoutMs: timeouts.proposalTimeoutMs,
    clock: { nowMs },
    autoRun: true,
    // a slow fsync must not silence a leader (docs/recovery.md); past about one maximum
    // election timeout of waiting, followers may replace it
    heartbeatCoverTicks: p.plan.electionTicksMax,
    hooks,
  });
}
