// The node's one interval timer: Raft's tick, the services', membership's and readiness'
// ticks, and two watches that need a clock: a late tick (the event loop was
// blocked) and SupersededWatch (this node's id is bound to another data directory).
import type { Logger } from 'pino';
import type { ApplyOutput } from '../lock-fsm/index.js';
import type { RaftDriver } from '../raft/driver.js';
import type { Membership } from './membership/membership.js';
import type { Readiness } from './membership/readiness.js';
import { AmnesiaError, SupersededWatch, amnesiaLine } from './membership/amnesia-check.js';
import type { RaftLockService } from './services/lock-service.js';

export interface TickerParts {
  nodeId: string;
  dataDir: string;
  tickMs: number;
  slowMs: number;
  electionTimeoutMaxMs: number;
  driver: RaftDriver<ApplyOutput>;
  /** the core's status, as SupersededWatch reads it */
  raftStatus: () => Parameters<SupersededWatch['observe']>[0];
  service: RaftLockService;
  membership: Membership;
  readiness: Readiness;
  nowMs: () => number;
  logger: Logger;
  onFatal: (err: unknown) => void;
}

export function startTicker(p: TickerParts): NodeJS.Timeout {
  const { driver, nowMs } = p;
  let lastTickAt = nowMs();
  let superseded = false;
  // one maximum election timeout: appends from a leader whose commit index lagged when it
  // sent them (a new leader before its first commit) are long through by then
  const supersededWatch = new SupersededWatch(p.electionTimeoutMaxMs);
  return setInterval(() => {
    if (!superseded && supersededWatch.observe(p.raftStatus(), nowMs())) {
      // the log binds our id to another data directory, and it holds what our leader has
      // committed: we are a member that lost its data; never go on as one (the core
      // already refuses to vote or count)
      superseded = true;
      p.onFatal(new AmnesiaError(amnesiaLine(p.nodeId, p.dataDir, `the cluster's configuration binds ${p.nodeId} to another data directory than ${p.dataDir}`)));
      return;
    }
    // a late tick means the event loop was blocked: nothing was sent or received meanwhile
    const at = nowMs();
    if (at - lastTickAt - p.tickMs >= p.slowMs) p.logger.warn({ ms: Math.round(at - lastTickAt - p.tickMs), role: driver.currentRole, term: driver.currentTerm }, 'event loop was blocked');
    lastTickAt = at;
    driver.tick();
    p.service.onTick();
    p.membership.onTick();
    p.readiness.onTick();
  }, p.tickMs);
}
