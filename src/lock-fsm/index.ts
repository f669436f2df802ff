// Public API of the lock state machine (pure, synchronous; see docs/lock-fsm.md).
export type { Command, CommandKind, Envelope, KeyBinding, NewSessionSpec } from './commands.js';
export { InvalidCommandError, parseCommand, parseEnvelope } from './commands.js';
export type { ApplyOutput, ApplyResult, BlockedName, CycleEntry, FsmEvent, GrantEndReason, GrantKind, HolderInfo, KeyReuse, LimitName, RevokedGrant, SetGrant } from './results.js';
export { parseApplyResult } from './results.js';
export type { ElectionInfo, FsmCounts, HoldInfo, LockInfo, LockWaiterInfo, LockFsmOptions, SemaphoreInfo, SessionGrantInfo, SessionInfo, WaitInfo } from './fsm.js';
export { LockFsm } from './fsm.js';
export type { StateV1 } from './snapshot.js';
export { SNAPSHOT_FORMAT, SNAPSHOT_VERSION, exportState, importState } from './snapshot.js';
export type { GrantLive, LessorOptions, LessorSource, WaitLive, WaitSource } from './lessor.js';
export { Lessor } from './lessor.js';
export {
  LOCK_NAME_RE, MAX_DURATION_MS, MAX_ELECTION_VALUE_BYTES, MAX_PERMITS, MAX_IDEMPOTENCY_KEY_BYTES, MAX_OWNER_BYTES, MAX_WAIT_MS, SESSION_ID_RE,
  isElectionValue, isIdempotencyKey, isLockName, isOwner, isSessionId, utf8Length,
} from './names.js';
export { assertFsmInvariants } from './invariants.js';
export type { NewWait } from './deadlock.js';
export { checkDeadlockAnswer, waitForCycle, walkNewWait, wouldDeadlock } from './deadlock.js';
export { MAX_SET_NAMES } from './names.js';
