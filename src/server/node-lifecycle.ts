// A node's life after it is built: listening (and undoing a half-done start), joining a
// running cluster in the background, and the graceful stop.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { ApplyOutput } from '../lock-fsm/index.js';
import type { RaftDriver } from '../raft/driver.js';
import type { HttpTransport } from '../transport/http-transport.js';
import type { ResolvedNode } from '../config.js';
import type { Membership } from './membership/membership.js';
import { joinCluster } from './membership/join.js';
import { AmnesiaError, amnesiaLine, forgottenVoter } from './membership/amnesia-check.js';
import type { RaftLockService } from './services/lock-service.js';
import type { WatchHub } from './watch/watch-hub.js';
import type { NodeDisk } from './build-storage.js';

export interface Lifetime {
  server: FastifyInstance;
  driver: RaftDriver<ApplyOutput>;
  http: HttpTransport;
  storage: NodeDisk['storage'];
}

export async function listen(l: Lifetime, resolved: ResolvedNode): Promise<void> {
  try {
    await l.http.start();
    await l.server.listen({ host: resolved.apiListen.host, port: resolved.apiListen.port });
  } catch (err) {
    // A start that fails half-way (a port in use) must not leave the peer server or the
    // LevelDB handle keeping the process alive: `serve` prints one line and must then exit.
    await l.server.close().catch(() => undefined);
    await l.driver.stop().catch(() => undefined);
    await l.http.close().catch(() => undefined);
    await l.storage.close().catch(() => undefined);
    throw err;
  }
}

/**
 * A node started with --join and no membership yet asks to be added, in the background:
 * /healthz answers meanwhile, /readyz says "joining". A restarted member skips this.
 */
export function joinInBackground(join: { url: string; token?: string }, resolved: ResolvedNode, membership: Membership, signal: AbortSignal, logger: Logger, onFatal: (err: unknown) => void): void {
  const nodeId = resolved.node.id;
  const self = { id: nodeId, api: resolved.node.api, peer: resolved.node.peer };
  // an empty directory joining under the id of a current VOTER is that voter having lost
  // its data (a joiner becomes a voter only after it has caught up, so with a log): it
  // must be removed first (docs/membership.md, "A node whose data directory is gone")
  void forgottenVoter(join.url, nodeId, join.token).then((evidence) => {
    if (evidence !== null && !signal.aborted) onFatal(new AmnesiaError(amnesiaLine(nodeId, resolved.dataDir, evidence)));
  });
  joinCluster({ url: join.url, self, ...(join.token ? { token: join.token } : {}), learn: (ms) => membership.learn(ms), logger, signal }).then(
    () => logger.info({ via: join.url, state: membership.selfState() }, membership.selfState() === 'voter' ? 'joined the cluster as a voter' : 'joined the cluster: the leader promotes this node to voter once it has caught up'),
    (err: unknown) => {
      if (signal.aborted) return;
      logger.fatal({ err: (err as Error).message }, 'could not join the cluster');
      onFatal(err);
    },
  );
}

export interface Stoppable extends Lifetime {
  service: RaftLockService;
  watchHub: WatchHub;
  ticker: NodeJS.Timeout;
  joinAbort: AbortController;
  /** more than one voter: worth handing leadership over before stopping */
  hasPeers: () => boolean;
  heartbeatMs: number;
  logger: Logger;
}

/** graceful stop: hand leadership over if leading, answer waiting requests, close everything (once) */
export function closer(s: Stoppable): () => Promise<void> {
  let closing: Promise<void> | null = null;
  return () => {
    closing ??= (async () => {
      // A leader hands over first so the cluster does not wait out an election timeout.
      if (s.driver.currentRole === 'leader' && s.hasPeers()) await handOver(s);
      s.joinAbort.abort();
      s.service.shutdown();
      s.watchHub.close();
      clearInterval(s.ticker);
      await s.server.close();
      await s.driver.stop({ writeCommit: true }); // a clean restart has the commit index it had
      await s.http.close();
      await s.storage.close();
      s.logger.info('node stopped');
    })();
    return closing;
  };
}

async function handOver(s: Stoppable): Promise<void> {
  try {
    const res = await s.service.transferLeadership(undefined, { signal: AbortSignal.timeout(2000) });
    if (!res.ok) {
      s.logger.warn({ err: res.failure.message }, 'leadership transfer before stopping failed');
      return;
    }
    s.logger.info({ to: res.value.leader_id }, 'handed leadership over before stopping');
    // Followers keep relaying requests here until they hear from the new leader (its
    // first append, a heartbeat or so later). Closing the API at once races those
    // relays on reused keep-alive sockets, which then answer 504 (outcome unknown).
    // Serve a little longer — as a follower now: relay onwards or answer 503 — so
    // nobody is routing to us when the sockets close.
    await new Promise((r) => setTimeout(r, Math.max(250, 4 * s.heartbeatMs)));
  } catch (err) {
    s.logger.warn({ err: (err as Error).message }, 'leadership transfer before stopping failed');
  }
}
