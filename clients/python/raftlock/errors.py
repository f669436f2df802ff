"""Typed errors. Every error the client raises is a RaftlockError with the contract's
``code`` (docs/contract.md "Errors"), the HTTP ``status`` when the server answered, and the
``endpoint`` that produced it. Branch on the class, as with the TypeScript SDK."""

import json
from typing import Any, List, Optional


class Holder:
    """The holder of a lock, as a ``lock_held`` answer names it."""

    def __init__(self, session_id: str, owner: str, fencing_token: int) -> None:
        self.session_id = session_id
        self.owner = owner
        self.fencing_token = fencing_token

    def __repr__(self) -> str:
        return f"Holder(session_id={self.session_id!r}, owner={self.owner!r}, fencing_token={self.fencing_token})"


class RaftlockError(Exception):
    def __init__(self, code: str, message: str, status: Optional[int] = None, endpoint: Optional[str] = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.endpoint = endpoint


class LockHeldError(RaftlockError):
    """409 lock_held: another session holds the lock and the wait (if any) ran out. On a
    campaign, ``leader`` is the election's leader (``{"session_id", "value",
    "fencing_token"}``, or None while none leads). On a lock set, ``blocked`` lists each
    lock that kept it from being granted: ``{"name", "holder"?}`` (holder a Holder)."""

    def __init__(self, message: str, holder: Optional[Holder] = None, leader: Optional[dict] = None,
                 blocked: Optional[List[dict]] = None, **kw: Any) -> None:
        super().__init__("lock_held", message, **kw)
        self.holder = holder
        self.leader = leader
        self.blocked = blocked


class DeadlockError(RaftlockError):
    """409 deadlock (docs/contract.md §5 "Deadlock detection"): waiting would have closed a
    cycle of sessions waiting for each other, so the server refused the wait at once and
    changed nothing. ``cycle`` lists each session with the name it waits on, this request's
    session first: ``{"session_id", "name", "kind"?}`` ("semaphore" for a semaphore's name).
    Release what you hold and try again, or take the locks together (lock_all)."""

    def __init__(self, message: str, cycle: Optional[List[dict]] = None, **kw: Any) -> None:
        super().__init__("deadlock", message, **kw)
        self.cycle = cycle or []


class SemaphoreFullError(RaftlockError):
    """409 semaphore_full: too few free permits and the wait (if any) ran out."""

    def __init__(self, message: str, in_use: Optional[int] = None, limit: Optional[int] = None, **kw: Any) -> None:
        super().__init__("semaphore_full", message, **kw)
        self.in_use = in_use
        self.limit = limit


class LimitMismatchError(RaftlockError):
    """409 limit_mismatch: the semaphore is busy under another ``limit``."""

    def __init__(self, message: str, limit: Optional[int] = None, **kw: Any) -> None:
        super().__init__("limit_mismatch", message, **kw)
        self.limit = limit


class CompactedError(RaftlockError):
    """410 compacted: a watch resume point older than every endpoint keeps; a resume after
    ``compacted_index`` is possible."""

    def __init__(self, message: str, compacted_index: Optional[int] = None, **kw: Any) -> None:
        super().__init__("compacted", message, **kw)
        self.compacted_index = compacted_index


class NotHolderError(RaftlockError):
    """409 not_holder: renew/release by a session that does not hold the lock, or a stale token."""

    def __init__(self, message: str, **kw: Any) -> None:
        super().__init__("not_holder", message, **kw)


class SessionNotFoundError(RaftlockError):
    """404 session_not_found: the session expired or was closed."""

    def __init__(self, message: str, **kw: Any) -> None:
        super().__init__("session_not_found", message, **kw)


class UnavailableError(RaftlockError):
    """No endpoint answered within the retry budget (503, connection errors): nothing was
    applied -- except for the subclass OutcomeUnknownError."""

    def __init__(self, message: str, code: str = "unavailable", **kw: Any) -> None:
        super().__init__(code, message, **kw)


class TooManyRequestsError(UnavailableError):
    def __init__(self, message: str, **kw: Any) -> None:
        super().__init__(message, code="too_many_requests", **kw)


class OutcomeUnknownError(UnavailableError):
    """A change was sent but never definitely answered: it may have been applied. Retrying
    with the same Idempotency-Key (``idempotency_key``) is safe."""

    def __init__(self, message: str, idempotency_key: Optional[str] = None, **kw: Any) -> None:
        super().__init__(message, code="timeout", **kw)
        self.idempotency_key = idempotency_key


class IdempotencyKeyReusedError(RaftlockError):
    """422 idempotency_key_reused: the change's Idempotency-Key (``idempotency_key``) was
    first used for another request (another token, operation, name or body); the server
    applied nothing. Never retried. This client draws a fresh key per change, so seeing it
    means two changes were sent under one key."""

    def __init__(self, message: str, idempotency_key: Optional[str] = None, **kw: Any) -> None:
        super().__init__("idempotency_key_reused", message, **kw)
        self.idempotency_key = idempotency_key


class InvalidRequestError(RaftlockError):
    """400/413/415, or a malformed answer (bad_response): retrying cannot help."""


class PermissionDeniedError(RaftlockError):
    """401 unauthenticated / 403 permission_denied."""


class SessionLostError(RaftlockError):
    """The session's lease can no longer be proven, or the session was closed."""

    def __init__(self, session_id: str, message: str) -> None:
        super().__init__("session_lost", message)
        self.session_id = session_id


class LockLostError(RaftlockError):
    """The lock can no longer be proven held."""

    def __init__(self, name: str, fencing_token: int, message: str) -> None:
        super().__init__("lock_lost", message)
        self.lock_name = name
        self.fencing_token = fencing_token


_STATUS_CODES = {400: "invalid_request", 401: "unauthenticated", 403: "permission_denied", 404: "not_found",
                 408: "request_timeout", 413: "payload_too_large", 415: "unsupported_media_type", 429: "too_many_requests",
                 503: "unavailable", 504: "timeout"}


def error_from_response(status: int, body: bytes, endpoint: str, idempotency_key: Optional[str] = None) -> RaftlockError:
    """Maps one error answer ``{"error": {"code", "message", ...}}`` to its typed error; a
    body that cannot be parsed still gives a RaftlockError naming the status.
    ``idempotency_key``: the key the request carried (named by IdempotencyKeyReusedError)."""
    e: dict = {}
    try:
        parsed = json.loads(body.decode("utf-8")) if body else None
        if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
            e = parsed["error"]
    except (ValueError, UnicodeDecodeError):
        pass
    code = e.get("code") if isinstance(e.get("code"), str) else _STATUS_CODES.get(status, "internal" if status >= 500 else "unexpected_status")
    msg = f"{endpoint}: {e['message'] if isinstance(e.get('message'), str) else f'HTTP {status}'}"
    kw = {"status": status, "endpoint": endpoint}
    if code == "lock_held":
        h = e.get("holder")
        holder = None
        if isinstance(h, dict) and isinstance(h.get("session_id"), str) and isinstance(h.get("fencing_token"), int):
            holder = Holder(h["session_id"], h.get("owner") if isinstance(h.get("owner"), str) else "", h["fencing_token"])
        ld = e.get("leader")
        leader = ld if isinstance(ld, dict) and isinstance(ld.get("session_id"), str) else None
        blocked = None
        if isinstance(e.get("blocked"), list):
            blocked = []
            for b in e["blocked"]:
                if isinstance(b, dict) and isinstance(b.get("name"), str):
                    bh = b.get("holder")
                    row: dict = {"name": b["name"]}
                    if isinstance(bh, dict) and isinstance(bh.get("session_id"), str) and isinstance(bh.get("fencing_token"), int):
                        row["holder"] = Holder(bh["session_id"], bh.get("owner") if isinstance(bh.get("owner"), str) else "", bh["fencing_token"])
                    blocked.append(row)
        return LockHeldError(msg, holder, leader, blocked, **kw)
    if code == "deadlock":
        cycle = []
        for c in e.get("cycle") if isinstance(e.get("cycle"), list) else []:
            if isinstance(c, dict) and isinstance(c.get("session_id"), str) and isinstance(c.get("name"), str):
                cycle.append({"session_id": c["session_id"], "name": c["name"], **({"kind": "semaphore"} if c.get("kind") == "semaphore" else {})})
        return DeadlockError(msg, cycle, **kw)
    if code == "semaphore_full":
        return SemaphoreFullError(msg, _int(e.get("in_use")), _int(e.get("limit")), **kw)
    if code == "limit_mismatch":
        return LimitMismatchError(msg, _int(e.get("limit")), **kw)
    if code == "compacted":
        return CompactedError(msg, _int(e.get("compacted_index")), **kw)
    if code == "idempotency_key_reused":
        return IdempotencyKeyReusedError(msg, idempotency_key, **kw)
    if code == "not_holder":
        return NotHolderError(msg, **kw)
    if code == "session_not_found":
        return SessionNotFoundError(msg, **kw)
    if code in ("unavailable", "request_timeout"):  # 408: the request did not arrive whole
        return UnavailableError(msg, code=code, **kw)
    if code == "too_many_requests":
        return TooManyRequestsError(msg, **kw)
    if code == "timeout":
        return OutcomeUnknownError(msg, None, **kw)
    if code in ("invalid_request", "payload_too_large", "unsupported_media_type"):
        return InvalidRequestError(code, msg, **kw)
    if code in ("unauthenticated", "permission_denied"):
        return PermissionDeniedError(code, msg, **kw)
    return RaftlockError(code, msg, **kw)


def _int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def definitely_not_applied(err: BaseException) -> bool:
    """The server answered that the change was not applied: a 4xx, or a 503/429 with no
    earlier attempt of unknown outcome. Anything else -- an interrupt, a timeout,
    OutcomeUnknownError, a 500, a malformed answer -- may hide an applied change."""
    if not isinstance(err, RaftlockError) or isinstance(err, OutcomeUnknownError):
        return False
    if err.status is not None and 400 <= err.status < 500:
        return True
    return err.code in ("unavailable", "too_many_requests")
