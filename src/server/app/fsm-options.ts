// The lock FSM's options (its limits) from a cluster file: one function for the running
// node (src/server/compose.ts) and for a restore (src/server/ops/restore.ts), so a restored snapshot is checked
// against the limits the node will run with.
import type { Config } from '../../config.js';
import type { LockFsmOptions } from '../../lock-fsm/index.js';

export function lockFsmOptions(config: Config): LockFsmOptions {
  return {
    maxSessions: config.limits.maxSessions,
    maxWaitersPerLock: config.limits.maxWaitersPerLock,
    maxSessionsPerPrincipal: config.limits.maxSessionsPerToken,
    maxLocks: config.limits.maxLocks,
    ...(testMutations().has('idem-unbound') ? { testIdemUnbound: true } : {}),
  };
}

/** TEST HOOK (docs/jepsen-lite.md "Does it bite?"): RAFTLOCK_TEST_MUTATION=idem-unbound,
 *  legacy-wait-tracking, count-unsynced-self switches a fix off in a real node, for
 *  jepsen-lite's mutation rows and the bench's measure of a rule's price. Only tests and
 *  the bench set it; never set it in production. */
export function testMutations(env: NodeJS.ProcessEnv = process.env): ReadonlySet<string> {
  return new Set((env.RAFTLOCK_TEST_MUTATION ?? '').split(',').map((s) => s.trim()).filter(Boolean));
}
