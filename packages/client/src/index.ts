// The raftlock SDK: everything a program needs to use locks safely (docs/client.md).
export { RaftlockClient } from './client.js';
export type { ClientOptions, OpenSessionOptions, SessionOptions, AcquireOptions, ReadOptions, ListOptions, WithLockContext, WithLocksContext, WithLockOptions, SemaphoreAcquireOptions, WithSemaphoreContext, WithSemaphoreOptions, RevokeOptions, RevokedGrant, CampaignOptions, CampaignRequestOptions } from './client.js';
export { Session, defaultSafetyMarginMs } from './session.js';
export type { SessionCampaignOptions, SessionLockOptions, SessionSemaphoreOptions, SessionTiming } from './session.js';
export { Lock } from './lock.js';
export { LockSet } from './lock-set.js';
export { SemaphoreGrant } from './semaphore.js';
export { Leadership } from './leadership.js';
export type { LeadershipHost } from './leadership.js';
export {
  RaftlockError, LockHeldError, NotHolderError, SessionNotFoundError, UnavailableError, TooManyRequestsError,
  OutcomeUnknownError, InvalidRequestError, CompactedError, DeadlockError, PermissionDeniedError, SessionLostError, LockLostError, SemaphoreFullError, LimitMismatchError, IdempotencyKeyReusedError, errorFromResponse,
} from './errors.js';
export type { BlockedLock, DeadlockStep, HolderInfo, RaftlockErrorOptions } from './errors.js';
export type { WatchEvent, WatchEventData, WatchEventName, WatchOptions, WatchSynced, Leader } from './watch.js';
export { parseFrame as parseWatchFrame } from './watch.js';
export type { CampaignGrant, ElectionInfo, LeaderInfo, Grant, LockSetGrantInfo, SemaphoreGrantInfo, SemaphoreInfo, SessionGrant, SessionInfo, KeepaliveAnswer, KeepaliveGrant, LockInfo, MemberInfo, ClusterInfo } from './wire.js';
export { parseDuration, formatDuration, DurationError } from './duration.js';
export { fencedQuery, STALE_FENCING_TOKEN_SQLSTATE } from './fenced-query.js';
export type { PgQueryable, PgQueryResult, FencedQueryOptions } from './fenced-query.js';
export { StaleFencingTokenError, mapFencingError, STALE_FENCING_TOKEN_CODE } from './stale-fencing-token.js';
export type { FencingErrorContext } from './stale-fencing-token.js';
export { FENCE_LUA, FENCED_SET_LUA } from './redis-fencing.js';
