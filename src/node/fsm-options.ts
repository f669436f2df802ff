// The lock FSM's options (its limits) from a cluster file: one function for the running
// node (raftlock-node.ts) and for a restore (restore.ts), so a restored snapshot is checked
// against the limits the node will run with.
import type { Config } from '../config.js';
import type { LockFsmOptions } from '../lock-fsm/index.js';

export function lockFsmOptions(config: Config): LockFsmOptions {
  return {
    maxSessions: config.limits.maxSessions,
    maxWaitersPerLock: config.limits.maxWaitersPerLock,
    maxSessionsPerPrincipal: config.limits.maxSessionsPerToken,
    maxLocks: config.limits.maxLocks,
  };
}
