// A node's clocks and timeouts, all derived from the cluster file's heartbeat and election
// timeout (docs/contract.md §2), so one place says how they relate.
import type { Config } from '../config.js';

/** The strict reconfiguration check counts a voter as reachable when a message of the
 *  leader's current term came from it within this long (docs/membership.md). */
export function strictCheckWindowMs(config: Config): number {
  return Math.max(1000, 2 * config.electionTimeoutMs.max);
}

export interface TickPlan {
  tickMs: number;
  electionTicks: number;
  electionTicksMax: number;
  heartbeatTicks: number;
}

/** Raft ticks at the heartbeat interval; election timeouts are whole ticks. */
export function tickPlan(config: Config): TickPlan {
  const tickMs = config.heartbeatMs;
  const electionTicks = Math.max(2, Math.round(config.electionTimeoutMs.min / tickMs));
  // the core draws from [min, max): +1 makes the file's max itself reachable
  const electionTicksMax = Math.max(electionTicks + 1, Math.round(config.electionTimeoutMs.max / tickMs) + 1);
  return { tickMs, electionTicks, electionTicksMax, heartbeatTicks: 1 };
}

export interface NodeTimeouts {
  proposalTimeoutMs: number;
  readTimeoutMs: number;
  /** a follower's relay: the leader's own longest answer time plus a margin */
  forwardTimeoutMs: number;
  /** what counts as a stall worth a log line: half the shortest election timeout */
  slowMs: number;
}

/**
 * The leader-side timeouts, and the relay budget derived from them: a follower relaying a
 * request waits for the leader's own longest answer time plus forwardTimeoutMs, so it never
 * reports "outcome unknown" for something the leader completes (api/forward.ts).
 */
export function nodeTimeouts(config: Config, plan: TickPlan): NodeTimeouts {
  const proposalTimeoutMs = Math.max(5000, 3 * config.electionTimeoutMs.max);
  const readTimeoutMs = Math.max(2000, 2 * config.electionTimeoutMs.max);
  // a plain request: at most a read barrier and a proposal on the leader, plus a margin
  const forwardTimeoutMs = proposalTimeoutMs + readTimeoutMs + 1000;
  const slowMs = Math.max(2 * plan.tickMs, config.electionTimeoutMs.min / 2);
  return { proposalTimeoutMs, readTimeoutMs, forwardTimeoutMs, slowMs };
}
