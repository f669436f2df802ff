"""raftlock: the Python client of the raftlock lock service (standard library only).

    from raftlock import Client
    client = Client(["http://127.0.0.1:7001", "http://127.0.0.1:7002"])
    with client.lock("billing/nightly", ttl=10, wait=30) as lock:
        write(..., fencing_token=lock.fencing_token)   # the resource checks the token
        if lock.lost.is_set(): ...                     # stop: it can no longer be proven held

The safety rules are the TypeScript SDK's (docs/client.md): a provable lease, keepalives
at ttl/3 with jitter, one Idempotency-Key per change across retries, failover with
Retry-After, and no grant left behind by an acquire that gave up."""

from .client import Client
from .errors import (CompactedError, DeadlockError, Holder, IdempotencyKeyReusedError, InvalidRequestError,
                     LimitMismatchError, LockHeldError, LockLostError, NotHolderError, OutcomeUnknownError,
                     PermissionDeniedError, RaftlockError, SemaphoreFullError, SessionLostError, SessionNotFoundError,
                     TooManyRequestsError, UnavailableError)
from .fencing import STALE_FENCING_TOKEN_CODE, is_stale_fencing_token
from .lock import Leadership, Lock, LockSet, SemaphoreGrant
from .session import Session, default_safety_margin

__all__ = ["Client", "Session", "Lock", "LockSet", "SemaphoreGrant", "Leadership", "Holder", "SemaphoreFullError", "DeadlockError",
           "LimitMismatchError", "CompactedError", "RaftlockError", "LockHeldError", "NotHolderError",
           "SessionNotFoundError", "UnavailableError", "TooManyRequestsError", "OutcomeUnknownError",
           "InvalidRequestError", "IdempotencyKeyReusedError", "PermissionDeniedError", "SessionLostError",
           "LockLostError", "default_safety_margin"]
__all__ += ["STALE_FENCING_TOKEN_CODE", "is_stale_fencing_token"]
