"""The raftlock client: sessions with a provable lease, locks with fencing tokens, and
the retry and failover rules of the TypeScript SDK (docs/client.md)."""

import random
import ssl
import time
import uuid
from contextlib import contextmanager
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union
from urllib.parse import quote

from .endpoints import EndpointSet
from .errors import InvalidRequestError, LockLostError, RaftlockError, SessionNotFoundError
from .lock import Leadership, Lock, LockSet
from .session import Session
from .transport import Cancel, Transport
from .watch import observe_leaders, watch_events


def _lock_path(name: str, action: str = "") -> str:
    # one path segment: "jobs/check" is never read as the check action
    return f"/v1/locks/{quote(name, safe='')}" + (f"/{action}" if action else "")


def _semaphore_path(name: str, action: str = "") -> str:
    return f"/v1/semaphores/{quote(name, safe='')}" + (f"/{action}" if action else "")


def _election_path(name: str, action: str = "") -> str:
    return f"/v1/elections/{quote(name, safe='')}" + (f"/{action}" if action else "")


def _session_path(sid: str, suffix: str = "") -> str:
    return f"/v1/sessions/{quote(sid, safe='')}{suffix}"


def _hold_left(answer: Dict[str, Any]) -> Optional[float]:
    """A grant's remaining max hold in seconds, as the server answered it (``max_hold_ms``:
    at most how much longer the grant lasts, counted from the send; docs/contract.md §4
    "Revocation and maximum hold"), or None: no max hold, or an older server."""
    v = answer.get("max_hold_ms")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        return None
    return v / 1000.0


def _ms(seconds: float) -> int:
    return max(0, int(round(seconds * 1000)))


class Client:
    """A client for a raftlock cluster; safe to share between threads.

    ``endpoints``: API URLs (a list, or one comma-separated string). ``timeout``: seconds
    for one HTTP attempt, on top of any wait (default 5). ``retry_budget``: seconds for one
    call across its retries and failovers (default 15). ``token``: a bearer token.
    ``ca_file`` / ``cert_file`` / ``key_file`` (or a ready ``ssl_context``): TLS for
    https:// endpoints, mutual TLS with a client certificate. ``on_warning(message, err)``
    receives recoverable problems (a failed keepalive that will be retried, a failed
    release), and information with ``err`` None (a grant that a late copy of a given-up
    acquire made, released by the session). ``leader_routing`` (default True): send
    writes, keepalives and linearizable reads to the leader the answers name, when its URL
    is one of ``endpoints``, sparing a follower's relay; False spreads them round-robin
    (README "Leader routing")."""

    def __init__(self, endpoints: Union[str, Sequence[str]], timeout: float = 5.0, retry_budget: float = 15.0,
                 token: Optional[str] = None, ca_file: Optional[str] = None, cert_file: Optional[str] = None,
                 key_file: Optional[str] = None, ssl_context: Optional[ssl.SSLContext] = None,
                 on_warning: Optional[Callable[[str, Optional[BaseException]], None]] = None,
                 leader_routing: bool = True) -> None:
        urls = [u.strip() for u in endpoints.split(",") if u.strip()] if isinstance(endpoints, str) else list(endpoints)
        for what, v in (("timeout", timeout), ("retry_budget", retry_budget)):
            if not isinstance(v, (int, float)) or not v > 0:
                raise InvalidRequestError("invalid_request", f"Client: {what} must be a positive number of seconds, got {v!r}")
        rng = random.Random()
        eps = EndpointSet(urls, time.monotonic, rng.randrange(max(1, len(urls))))
        if ssl_context is None and (ca_file or cert_file or key_file):
            if bool(cert_file) != bool(key_file):
                raise InvalidRequestError("invalid_request", "Client: cert_file and key_file go together (a client certificate and its key)")
            try:
                ssl_context = ssl.create_default_context(cafile=ca_file)
                if cert_file:
                    ssl_context.load_cert_chain(cert_file, key_file)
            except (OSError, ssl.SSLError) as e:
                raise InvalidRequestError("invalid_request", f"Client: TLS files: {e}") from e
        self.timeout = float(timeout)
        self._on_warning = on_warning
        self._transport = Transport(eps, float(timeout), float(retry_budget), token, ssl_context, rng, bool(leader_routing))

    @property
    def endpoints(self) -> List[str]:
        return self._transport.endpoints.urls

    def close(self) -> None:
        """Nothing is pooled; kept for symmetry with the other clients."""

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- sessions and locks ----------------------------------------------------------

    def session(self, ttl: Optional[float] = None, owner: Optional[str] = None, lock_delay: Optional[float] = None,
                safety_margin: Optional[float] = None) -> Session:
        """Opens a session (``ttl`` seconds; default: the cluster's) and keeps it alive."""
        if ttl is not None and (not isinstance(ttl, (int, float)) or not ttl > 0):
            raise InvalidRequestError("invalid_request", f"ttl must be a positive number of seconds, got {ttl!r}")
        body: Dict[str, Any] = {}
        if ttl is not None:
            body["ttl_ms"] = _ms(ttl)
        if owner is not None:
            body["owner"] = owner
        if lock_delay is not None:
            body["lock_delay_ms"] = _ms(lock_delay)
        a = self._transport.call("POST", "/v1/sessions", "keyed", body=body, key=str(uuid.uuid4()))
        g = a.json("open session")
        sid, ttl_ms = g.get("session_id"), g.get("ttl_ms")
        if not isinstance(sid, str) or not isinstance(ttl_ms, int) or ttl_ms <= 0:
            raise InvalidRequestError("bad_response", f"{a.endpoint}: open session: answer without session_id/ttl_ms", status=a.status, endpoint=a.endpoint)
        try:
            return Session(self, sid, ttl_ms / 1000.0, a.sent_at, safety_margin)
        except InvalidRequestError:
            self._close_session(sid, budget=2.0)
            raise

    @contextmanager
    def lock(self, name: str, ttl: Optional[float] = None, wait: float = 0, owner: Optional[str] = None,
             shared: bool = False, max_hold: Optional[float] = None) -> Iterator[Lock]:
        """``with client.lock(name, ttl=10, wait=30) as lock:`` opens a session, takes the
        lock (waiting up to ``wait`` seconds), runs the block, and closes the session (one
        committed command that releases the lock). If the lock was lost before the block
        ended, LockLostError is raised on the way out (the block's own error is its
        ``__cause__``): the work was not protected to the end."""
        with self._guarded(lambda s: s.lock(name, wait=wait, owner=owner, shared=shared, max_hold=max_hold),
                           self._lost_error, ttl, owner, "its lock expires") as lk:
            yield lk

    @contextmanager
    def locks(self, names: List[str], ttl: Optional[float] = None, wait: float = 0, owner: Optional[str] = None,
              shared: bool = False, max_hold: Optional[float] = None) -> Iterator[LockSet]:
        """``with client.locks(["accounts/1", "accounts/2"], ttl=10, wait=30) as ls:`` takes
        every name together (Session.lock_all: never deadlocks with another set over the same
        names, in any order), runs the block with ``ls.fencing_tokens``, and closes the
        session. LockLostError on the way out if any lock was lost before the block ended."""
        with self._guarded(lambda s: s.lock_all(names, wait=wait, owner=owner, shared=shared, max_hold=max_hold),
                           self._set_lost_error, ttl, owner, "its locks expire") as ls:
            yield ls

    @contextmanager
    def _guarded(self, take: Callable[[Session], Any], lost_error: Callable[[Any], LockLostError],
                 ttl: Optional[float], owner: Optional[str], expiry: str) -> Iterator[Any]:
        """The body of lock() and locks(): a session of its own, what ``take`` acquires in it
        (anything with a ``lost`` event), LockLostError on the way out if it was lost before
        the block ended (the block's own error as its ``__cause__``), and the session closed."""
        session = self.session(ttl=ttl, owner=owner)
        try:
            held = take(session)
            try:
                yield held
            except BaseException as e:
                if held.lost.is_set():
                    raise lost_error(held) from e
                raise
            if held.lost.is_set():
                raise lost_error(held)
        finally:
            try:
                session.close()
            except Exception as e:  # noqa: BLE001 -- the block's outcome stands; the session expires
                self._warn(f"could not close session {session.id} ({expiry} after its ttl)", e)

    @classmethod
    def _set_lost_error(cls, ls: LockSet) -> LockLostError:
        for lk in ls.locks:
            if lk.lost.is_set():
                return cls._lost_error(lk)
        return LockLostError("", 0, "a lock of the set was lost")

    @staticmethod
    def _lost_error(lk: Lock) -> LockLostError:
        why = lk.reason.message if lk.reason else f"lock {lk.name} was lost"
        return LockLostError(lk.name, lk.fencing_token, f"{why} -- the work under the lock was not protected to the end")

    # ---- one-shot reads ---------------------------------------------------------------

    def get_lock(self, name: str, stale: bool = False) -> Dict[str, Any]:
        """GET /v1/locks/{name}: ``{"name", "held", "holder"?, "waiters"}`` (linearizable unless stale)."""
        a = self._transport.call("GET", _lock_path(name) + ("?consistency=stale" if stale else ""), "read", any_node=stale)
        return a.json(f"get {name}")

    def check_token(self, name: str, fencing_token: int) -> bool:
        """GET /v1/locks/{name}/check: does ``fencing_token`` still hold ``name``?"""
        if not isinstance(fencing_token, int) or fencing_token < 1:
            raise InvalidRequestError("invalid_request", f"fencing token must be a positive integer, got {fencing_token!r}")
        a = self._transport.call("GET", f"{_lock_path(name, 'check')}?fencing_token={fencing_token}", "read")
        cur = a.json(f"check {name}").get("current")
        if not isinstance(cur, bool):
            raise InvalidRequestError("bad_response", f'{a.endpoint}: unexpected answer to check {name}: no boolean "current"')
        return cur

    def get_semaphore(self, name: str, stale: bool = False) -> Dict[str, Any]:
        """GET /v1/semaphores/{name}: ``{"name", "limit", "in_use", "holders", "waiters"}``."""
        a = self._transport.call("GET", _semaphore_path(name) + ("?consistency=stale" if stale else ""), "read", any_node=stale)
        return a.json(f"get semaphore {name}")

    def leader(self, name: str, stale: bool = False) -> Optional[Dict[str, Any]]:
        """GET /v1/elections/{name}: the leader ``{"session_id", "value", "fencing_token"}``,
        or None while none leads (linearizable unless stale)."""
        a = self._transport.call("GET", _election_path(name) + ("?consistency=stale" if stale else ""), "read", any_node=stale)
        ld = a.json(f"get election {name}").get("leader")
        return ld if isinstance(ld, dict) else None

    def revoke(self, name: str, session_id: Optional[str] = None, semaphore: bool = False) -> List[Dict[str, Any]]:
        """POST /v1/locks/{name}/revoke (or the semaphore's), the ``admin`` right: takes the
        grant of ``session_id``, or every grant of the name, away at once and without
        lock-delay; the next waiter gets a larger token. Returns the grants taken away
        (``{"session_id", "fencing_token"}``); NotHolderError when ``session_id`` holds none.
        The holder's session lives on and learns it from its next keepalive."""
        body: Dict[str, Any] = {} if session_id is None else {"session_id": session_id}
        path = _semaphore_path(name, "revoke") if semaphore else _lock_path(name, "revoke")
        a = self._transport.call("POST", path, "keyed", body=body, key=str(uuid.uuid4()))
        rows = a.json(f"revoke {name}").get("revoked")
        if not isinstance(rows, list):
            raise InvalidRequestError("bad_response", f'{a.endpoint}: unexpected answer to revoke {name}: no "revoked" list')
        return rows

    def campaign(self, name: str, value: str, ttl: Optional[float] = None, wait: float = 0, owner: Optional[str] = None,
                 max_hold: Optional[float] = None) -> Leadership:
        """Opens a session for the leadership and campaigns in election ``name`` (see
        Session.campaign); ``resign()`` (or leaving ``with``) also closes that session, and
        a failed campaign closes it."""
        session = self.session(ttl=ttl, owner=owner)
        try:
            return session.campaign(name, value, wait=wait, owner=owner, max_hold=max_hold, _own_session=True)
        except BaseException:
            try:
                session.close()
            except RaftlockError as e:
                self._warn("could not close the session of a failed campaign (it will expire after its ttl)", e)
            raise

    def watch(self, prefix: str = "", from_index: Optional[int] = None, idle_timeout: float = 45.0,
              stop: Optional[threading.Event] = None) -> Iterator[Dict[str, Any]]:
        """GET /v1/watch as an iterator of events (``{"event", "kind", "name", "session_id"?,
        "fencing_token"?, "value"?, "mode"?, "permits"?, "limit"?, "reason"?, "index"}``) of
        every lock, semaphore and election whose name starts with ``prefix``, in log order.
        Without ``from_index`` it first gives one ``state`` event per current holder, then
        ``{"event": "synced", "index"}``. It reconnects to another endpoint when a node
        fails and resumes after the last event it gave: no event is lost or given twice.
        CompactedError when no endpoint keeps the resume point any more. It ends when the
        caller stops iterating (``close()`` the generator) or when ``stop`` is set (seen at
        the next line the server sends: an event, or its keepalive comment every 15 s)."""
        if from_index is not None and (not isinstance(from_index, int) or from_index < 0):
            raise InvalidRequestError("invalid_request", f"from_index must be a log index (an integer >= 0), got {from_index!r}")
        return watch_events(self._transport, prefix, from_index, idle_timeout, stop)

    def observe(self, name: str, idle_timeout: float = 45.0, stop: Optional[threading.Event] = None) -> Iterator[Optional[Dict[str, Any]]]:
        """The leader of election ``name`` each time it changes (None: nobody leads), first
        the current one: one step per command, so a resign and the next candidate's win
        give the new leader, never a None in between. Built on watch(name)."""
        return observe_leaders(self._transport, name, idle_timeout, stop)

    def close_session(self, session_id: str) -> List[str]:
        """DELETE /v1/sessions/{id}: ends any session (yours or, with admin rights, another's)."""
        return self._close_session(session_id)

    # ---- internals --------------------------------------------------------------------

    def _warn(self, message: str, err: Optional[BaseException]) -> None:
        if self._on_warning is not None:
            self._on_warning(message, err)

    def _keepalive(self, sid: str, deadline: float, cancel: Optional[Cancel] = None) -> Tuple[float, Optional[List[Dict[str, Any]]]]:
        """(send time of the answered attempt, the session's grants as of the keepalive --
        None from a server whose answer does not list them: docs/api.md "Keepalive answers")"""
        a = self._transport.call("POST", _session_path(sid, "/keepalive"), "renewal", deadline=deadline, cancel=cancel)
        grants = a.json("keepalive").get("grants")
        return a.sent_at, (grants if isinstance(grants, list) else None)

    def _close_session(self, sid: str, budget: Optional[float] = None) -> List[str]:
        deadline = None if budget is None else time.monotonic() + budget
        a = self._transport.call("DELETE", _session_path(sid), "keyed", key=str(uuid.uuid4()), deadline=deadline)
        rel = a.json("close session").get("released")
        return [x for x in rel if isinstance(x, str)] if isinstance(rel, list) else []

    def _acquire(self, name: str, sid: str, wait: float, owner: Optional[str], cancel: Optional[Cancel] = None,
                 shared: bool = False, max_hold: Optional[float] = None) -> Dict[str, Any]:
        base: Dict[str, Any] = {"session_id": sid}
        if owner is not None:
            base["owner"] = owner
        if shared:
            base["mode"] = "shared"
        if max_hold is not None:
            base["max_hold_ms"] = _ms(max_hold)
        return self._waiting_call(_lock_path(name, "acquire"), f"acquire {name}", base, wait, cancel)

    def _acquire_all(self, names: List[str], sid: str, wait: float, owner: Optional[str], cancel: Optional[Cancel] = None,
                     shared: bool = False, max_hold: Optional[float] = None) -> Dict[str, Any]:
        """POST /v1/locks/acquire-all (docs/contract.md §5): ``{"grants": [{"name",
        "fencing_token"}], "ttl", "sent_at"}``, the grants matching ``names`` one to one"""
        base: Dict[str, Any] = {"names": list(names), "session_id": sid}
        if owner is not None:
            base["owner"] = owner
        if shared:
            base["mode"] = "shared"
        if max_hold is not None:
            base["max_hold_ms"] = _ms(max_hold)
        wait_ms = _ms(wait)

        def body(elapsed: float) -> Dict[str, Any]:
            return dict(base, wait_ms=max(0, wait_ms - _ms(elapsed)))

        what = f"acquire-all {', '.join(names)}"
        a = self._transport.call("POST", "/v1/locks/acquire-all", "keyed", body=body, key=str(uuid.uuid4()), wait=wait, cancel=cancel)
        g = a.json(what)
        grants, ttl_ms = g.get("grants"), g.get("ttl_ms")
        ok = isinstance(grants, list) and isinstance(ttl_ms, int) and len(grants) == len(names)
        if ok:
            for x, n in zip(grants, names):  # type: ignore[arg-type]
                ok = ok and isinstance(x, dict) and x.get("name") == n and isinstance(x.get("fencing_token"), int) and x["fencing_token"] >= 1
        if not ok:
            raise InvalidRequestError("bad_response", f"{a.endpoint}: {what}: the grants do not match the names asked for", status=a.status, endpoint=a.endpoint)
        return {"grants": [{"name": x["name"], "fencing_token": x["fencing_token"], "hold_left": _hold_left(x)} for x in grants], "ttl": ttl_ms / 1000.0, "sent_at": a.sent_at}  # type: ignore[union-attr]

    def _release_all(self, names: List[str], sid: str, budget: Optional[float] = None) -> List[str]:
        deadline = None if budget is None else time.monotonic() + budget
        a = self._transport.call("POST", "/v1/locks/release-all", "keyed", body={"names": list(names), "session_id": sid}, key=str(uuid.uuid4()), deadline=deadline)
        rel = a.json("release-all").get("released")
        return [x for x in rel if isinstance(x, str)] if isinstance(rel, list) else []

    def _acquire_semaphore(self, name: str, sid: str, limit: int, permits: int, wait: float, owner: Optional[str],
                           max_hold: Optional[float], cancel: Optional[Cancel] = None) -> Dict[str, Any]:
        base: Dict[str, Any] = {"session_id": sid, "limit": limit, "permits": permits}
        if owner is not None:
            base["owner"] = owner
        if max_hold is not None:
            base["max_hold_ms"] = _ms(max_hold)
        g = self._waiting_call(_semaphore_path(name, "acquire"), f"acquire semaphore {name}", base, wait, cancel)
        g["permits"] = g["answer"].get("permits", permits)
        g["limit"] = g["answer"].get("limit", limit)
        return g

    def _campaign(self, name: str, sid: str, value: str, wait: float, owner: Optional[str], max_hold: Optional[float],
                  cancel: Optional[Cancel] = None) -> Dict[str, Any]:
        base: Dict[str, Any] = {"session_id": sid, "value": value}
        if owner is not None:
            base["owner"] = owner
        if max_hold is not None:
            base["max_hold_ms"] = _ms(max_hold)
        g = self._waiting_call(_election_path(name, "campaign"), f"campaign {name}", base, wait, cancel)
        v = g["answer"].get("value")
        g["value"] = v if isinstance(v, str) else value
        return g

    def _waiting_call(self, path: str, what: str, base: Dict[str, Any], wait: float, cancel: Optional[Cancel]) -> Dict[str, Any]:
        wait_ms = _ms(wait)

        # A retry (same Idempotency-Key) asks only for the wait that is left.
        def body(elapsed: float) -> Dict[str, Any]:
            return dict(base, wait_ms=max(0, wait_ms - _ms(elapsed)))

        a = self._transport.call("POST", path, "keyed", body=body, key=str(uuid.uuid4()), wait=wait, cancel=cancel)
        g = a.json(what)
        tok, ttl_ms = g.get("fencing_token"), g.get("ttl_ms")
        if not isinstance(tok, int) or tok < 1 or not isinstance(ttl_ms, int):
            raise InvalidRequestError("bad_response", f"{a.endpoint}: {what}: answer without a positive fencing_token", status=a.status, endpoint=a.endpoint)
        return {"fencing_token": tok, "ttl": ttl_ms / 1000.0, "sent_at": a.sent_at, "answer": g, "hold_left": _hold_left(g)}

    def _release_semaphore(self, name: str, sid: str, budget: Optional[float] = None) -> None:
        deadline = None if budget is None else time.monotonic() + budget
        self._transport.call("POST", _semaphore_path(name, "release"), "keyed", body={"session_id": sid}, key=str(uuid.uuid4()), deadline=deadline)

    def _resign(self, name: str, sid: str, budget: Optional[float] = None) -> None:
        deadline = None if budget is None else time.monotonic() + budget
        self._transport.call("POST", _election_path(name, "resign"), "keyed", body={"session_id": sid}, key=str(uuid.uuid4()), deadline=deadline)

    def _proclaim(self, name: str, sid: str, value: str) -> str:
        a = self._transport.call("POST", _election_path(name, "proclaim"), "keyed", body={"session_id": sid, "value": value}, key=str(uuid.uuid4()))
        v = a.json(f"proclaim {name}").get("value")
        return v if isinstance(v, str) else value

    def _release(self, name: str, sid: str, fencing_token: Optional[int], budget: Optional[float] = None) -> None:
        body: Dict[str, Any] = {"session_id": sid}
        if fencing_token is not None:
            body["fencing_token"] = fencing_token
        deadline = None if budget is None else time.monotonic() + budget
        self._transport.call("POST", _lock_path(name, "release"), "keyed", body=body, key=str(uuid.uuid4()), deadline=deadline)


__all__ = ["Client", "SessionNotFoundError"]
