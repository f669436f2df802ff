// Public API of the Raft core. Everything outside src/raft/core imports from here.
export * from './types.js';
export { RawNode, type RejectReason, type Rejection } from './raw-node.js';
export { RaftConfigError, MAX_ENTRY_BYTES, type RaftConfig } from './raft.js';
export { InvariantError, RaftAssertionError, StorageAssertionError, DriverAssertionError, FsmAssertionError } from '../../assert.js';
export { applyConfChange, decodeConfChange, encodeConfChange, ConfChangeError } from './conf.js';
export { committedIndex, voteResult, quorumSize, hasQuorum, type VoteResult } from './quorum.js';
export { describeData, describeEntry, describeEntries, describeMessage, describeReady, describeReadyLines, describeSnapshot } from './describe.js';
export { MemoryStorage, emptySnapshot, cloneConf, type Storage, type PersistBatch } from './storage.js';
export { seededRng, type Rng } from './rng.js';
export { MAX_PENDING_READS } from './read-only.js';
