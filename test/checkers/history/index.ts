// The checkers that judge a client history (docs/jepsen-lite.md "Checkers"), one file each,
// with the history format they read (history.ts) and the logs of the fenced resource and
// the watch streams (resource-logs.ts, watch-records.ts). Linearizability, the first
// checker, is linearizability.ts (the search in wgl.ts) over the reference model
// test/model/history-model.ts.
export * from './faults.js';
export * from './grants.js';
export * from './lease-safety.js';
export * from './token-order.js';
export * from './resource.js';
export * from './orphan-grants.js';
export * from './durability.js';
export * from './liveness.js';
export * from './memory.js';
export * from './leader-changes.js';
export * from './followers-behind.js';
