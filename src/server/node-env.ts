// What a node reads from its environment, in one place: the token the start-up check asks
// the cluster with, and the test hooks (never set in production). Everything else a node
// needs comes from the cluster file and the command line (docs/contract.md §1, §2).
import { testMutations } from './app/fsm-options.js';

export interface NodeEnv {
  /** RAFTLOCK_TOKEN: the bearer token the start-up amnesia check asks the peers with */
  token?: string;
  /** TEST HOOK (jepsen-lite's `unsynced` fault, docs/jepsen-lite.md "Faults"):
   *  RAFTLOCK_TEST_UNSYNCED_LOSS=1 keeps every unsynced write in memory until the next
   *  synced one, so a kill -9 loses it as a power cut would. Only test/jepsen-lite sets it. */
  unsyncedLoss: boolean;
  /** TEST HOOK: RAFTLOCK_TEST_MUTATION, the fixes switched off (docs/jepsen-lite.md) */
  mutations: ReadonlySet<string>;
}

export function nodeEnv(env: NodeJS.ProcessEnv = process.env): NodeEnv {
  return {
    unsyncedLoss: env.RAFTLOCK_TEST_UNSYNCED_LOSS === '1',
    mutations: testMutations(env),
    ...(env.RAFTLOCK_TOKEN ? { token: env.RAFTLOCK_TOKEN } : {}),
  };
}
