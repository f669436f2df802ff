"""A session kept alive by keepalives, and the client's PROOF of it.

The contract guarantees that a session never expires sooner than ttl after its client SENT
its last acknowledged keepalive, renew or acquire. So the session is proven alive until

    proven_until = send_time(last acknowledged renewal) + ttl - safety_margin

and is declared lost at that instant at the latest -- before the server could have expired
it -- rather than when some later call fails. The margin (default ttl/10, between 20 ms
and 2 s) absorbs clock-rate differences and late timers; a paused process can still
overrun it, which is what fencing tokens are for. Keepalives go out every ~ttl/3 with
+-10% jitter; each may retry across endpoints until the proof runs out, and a failed one is
retried quickly. Loss is final."""

import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Set, Tuple, TypeVar

from .errors import (InvalidRequestError, LockHeldError, LockLostError, NotHolderError, PermissionDeniedError, RaftlockError,
                     SemaphoreFullError, SessionLostError, SessionNotFoundError, definitely_not_applied)
from .lock import Leadership, Lock, LockSet, SemaphoreGrant
from .transport import Cancel, Cancelled

if TYPE_CHECKING:
    from .client import Client

#: The contract's longest single wait (wait_ms <= 300000); longer waits re-queue.
MAX_WAIT_PER_REQUEST = 300.0


def _wait_ran_out(elapsed: float, chunk: float) -> bool:
    """Whether a wait the server refused (LockHeldError, SemaphoreFullError) ran its chunk
    out. The server ends a wait no earlier than its wait_ms after the request arrived, so a
    refusal that comes sooner was not a timeout: the request could not wait at all (a share
    is never upgraded, a wait of the session it may not join) or its wait was withdrawn.
    Asking again would get the same answer at once, in a loop for the rest of the wait, so
    only a wait that ran out is queued again. The slack covers clock ticks."""
    return elapsed >= chunk - max(0.005, chunk / 100)


#: How long a name whose acquire gave up is watched for a grant a late copy of that acquire
#: makes: the server keeps an Idempotency-Key this long, and a copy (a relay that sat behind
#: a paused node) is most likely to come within seconds.
WATCH_SECONDS = 600.0
#: At most this many watched names per session; the one with the earliest deadline goes first.
MAX_WATCHED = 1024

T = TypeVar("T")

#: A grant's name space on the server and its name: ("lock" | "semaphore", name).
NameKey = Tuple[str, str]
#: A grant of a keepalive answer: (space, name, fencing token, waiters or None).
ListedGrant = Tuple[str, str, int, Optional[int]]


def listed_grants(grants: List[Dict[str, Any]]) -> List[ListedGrant]:
    """The well-formed grants of a keepalive answer (docs/api.md "Keepalive answers"):
    locks and elections in the "lock" name space, semaphores in theirs; ``waiters`` None
    when the server does not say (contention, docs/contract.md §5)."""
    out: List[ListedGrant] = []
    for g in grants:
        if isinstance(g, dict) and isinstance(g.get("name"), str) and isinstance(g.get("fencing_token"), int):
            w = g.get("waiters")
            out.append(("semaphore" if g.get("kind") == "semaphore" else "lock", g["name"], g["fencing_token"],
                        w if isinstance(w, int) and not isinstance(w, bool) else None))
    return out


def _count(counts: Dict[NameKey, int], keys: List[NameKey], delta: int) -> None:
    """Adds ``delta`` to each key's count; a count that reaches 0 leaves the map."""
    for k in keys:
        n = counts.get(k, 0) + delta
        if n > 0:
            counts[k] = n
        else:
            counts.pop(k, None)


class _Ask:
    """An acquire of this session out on the wire (docs/client.md "Acquires and releases of
    one name at once"). A second acquire of a name the session holds returns the same grant,
    so a release of the name in this session that starts while the request is out (another
    grant object's release, a given-up acquire's cleanup) may be applied after it and end the
    grant its answer describes: such a release sets ``overtaken``, and the answer is not
    handed out -- the acquire asks again once the release is done."""

    __slots__ = ("keys", "overtaken")

    def __init__(self, keys: List[NameKey]) -> None:
        self.keys = keys
        self.overtaken = False


def default_safety_margin(ttl: float) -> float:
    return min(2.0, max(0.02, ttl / 10))


class WatchedNames:
    """The names a session released after an acquire that gave up, each with the
    time.monotonic() until which a grant of it that no grant object holds is released
    (Session._sweep_late_grants). Not thread-safe: the session guards it with its lock.
    ``now`` is passed in so that the bookkeeping can be tested without waiting."""

    def __init__(self, period: float = WATCH_SECONDS, limit: int = MAX_WATCHED) -> None:
        self.period = period
        self.limit = limit
        self._until: Dict[NameKey, float] = {}

    def add(self, key: NameKey, now: float) -> None:
        """Watches ``key`` until ``now`` + period (watching it again extends the deadline)."""
        if key not in self._until and len(self._until) >= self.limit:
            del self._until[min(self._until, key=self._until.__getitem__)]
        self._until[key] = now + self.period

    def expire(self, now: float) -> None:
        """Drops every name whose deadline has come."""
        for k in [k for k, until in self._until.items() if until <= now]:
            del self._until[k]

    def __contains__(self, key: object) -> bool:
        return key in self._until

    def __len__(self) -> int:
        return len(self._until)


class Session:
    def __init__(self, client: "Client", session_id: str, ttl: float, opened_sent_at: float,
                 safety_margin: Optional[float] = None) -> None:
        self._client = client
        self.id = session_id
        self.ttl = ttl
        self.safety_margin = default_safety_margin(ttl) if safety_margin is None else safety_margin
        self.keepalive_interval = ttl / 3
        if not (0 <= self.safety_margin < ttl / 2):
            raise InvalidRequestError("invalid_request", f"safety_margin must be in [0, ttl/2), got {self.safety_margin} for ttl {ttl}")
        #: set when the session is lost (never when closed cleanly)
        self.lost = threading.Event()
        #: set when the session is lost or closed
        self.done = threading.Event()
        self.error: Optional[SessionLostError] = None
        self._mu = threading.RLock()
        self._state = "open"
        self._proven = opened_sent_at + ttl - self.safety_margin
        self._last_ack = opened_sent_at
        self._locks: Set[Lock] = set()
        # Late-grant sweep state (_sweep_late_grants), all guarded by _mu: the names released
        # after an acquire that gave up; acquires in flight and cleanup or sweep releases in
        # flight, counted per name. _changed wakes acquires waiting for such a release.
        self._watched = WatchedNames()
        self._acquiring: Dict[NameKey, int] = {}
        self._releasing: Dict[NameKey, int] = {}
        # the acquires out on the wire per name, which a release that starts overtakes (_Ask)
        self._asks: Dict[NameKey, Set[_Ask]] = {}
        self._changed = threading.Condition(self._mu)
        self._cancel = Cancel()  # cuts in-flight calls of this session short when it ends
        self._lost_timer: Optional[threading.Timer] = None
        with self._mu:
            self._arm_lost_timer()
        self._thread = threading.Thread(target=self._keepalive_loop, name=f"raftlock-keepalive-{session_id[:8]}", daemon=True)
        self._thread.start()

    # ---- public --------------------------------------------------------------------

    @property
    def proven_until(self) -> float:
        """time.monotonic() until which the session is proven alive; -inf once lost or closed."""
        with self._mu:
            return self._proven if self._state == "open" else float("-inf")

    @property
    def last_ack_sent_at(self) -> float:
        with self._mu:
            return self._last_ack

    @property
    def is_open(self) -> bool:
        with self._mu:
            return self._state == "open"

    def lock(self, name: str, wait: float = 0, owner: Optional[str] = None, shared: bool = False,
             max_hold: Optional[float] = None) -> Lock:
        """Takes ``name`` in this session, waiting up to ``wait`` seconds in the lock's FIFO
        queue (longer waits re-queue every 300 s). Raises LockHeldError when the wait runs
        out, SessionLostError when the session is lost meanwhile. ``shared=True`` takes a
        shared (read) lock; ``max_hold`` (seconds, 0.1 or more) asks the server to free the
        grant that long after it made it, and ``lost`` is set a safety margin before.

        An acquire that ends without a definite "not applied" (an interrupt, a timeout,
        OutcomeUnknownError, a network error) releases the name in this session before the
        error propagates: the grant may have raced the give-up, and the release is
        idempotent and harmless if nothing was granted. The name is then watched for 10
        minutes: a grant of it that a late copy of the acquire makes, which no lock object
        holds, is released after the keepalive that lists it (a warning reports it)."""
        def call(chunk: float) -> Dict[str, Any]:
            return self._client._acquire(name, self.id, chunk, owner, cancel=self._cancel, shared=shared, max_hold=max_hold)

        def make(g: Dict[str, Any]) -> Lock:
            return Lock(self, name, g["fencing_token"], g["ttl"], "shared" if shared else "exclusive")
        return self._acquire_in("lock", name, wait, max_hold, LockHeldError, call, make)  # type: ignore[return-value]

    def lock_all(self, names: List[str], wait: float = 0, owner: Optional[str] = None, shared: bool = False,
                 max_hold: Optional[float] = None) -> LockSet:
        """Takes every lock of ``names`` (1-64 distinct names) in this session at once: the
        server grants them together in one step, or makes the set wait as one request with
        one place in the FIFO queue of each name, so two sets over the same names, in any
        order, never wait for each other (docs/contract.md §5). lock()'s rules otherwise:
        LockHeldError (with ``blocked``) when the wait runs out, DeadlockError when waiting
        would close a cycle, and an acquire that ends without a definite "not applied" gives
        every name back (one release-all, which also withdraws the wait) before the error
        propagates, and watches the names as lock() says. The LockSet's ``lost`` is set when ANY of its locks is lost."""
        if not isinstance(names, (list, tuple)) or not 1 <= len(names) <= 64 or len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
            raise InvalidRequestError("invalid_request", f"a lock set names 1-64 distinct non-empty lock names, got {names!r}")
        names = list(names)
        if not isinstance(wait, (int, float)) or wait < 0 or wait != wait:
            raise InvalidRequestError("invalid_request", f"wait must be a number of seconds >= 0, got {wait!r}")
        if max_hold is not None and (not isinstance(max_hold, (int, float)) or not 0.1 <= max_hold <= 2147483.647):
            raise InvalidRequestError("invalid_request", f"max_hold must be a number of seconds in 0.1..2147483.647, got {max_hold!r}")
        self._assert_open()
        keys = [("lock", n) for n in names]

        def take(g: Dict[str, Any]) -> List[Lock]:
            locks = [Lock(self, x["name"], x["fencing_token"], g["ttl"], "shared" if shared else "exclusive") for x in g["grants"]]
            self._track_taken(locks, ", ".join(names))
            return locks
        # counted in flight from here: a sweep leaves these names alone until the locks are
        # in self._locks (or the acquire's own cleanup has run)
        with self._acquiring_names(keys):
            g, locks = self._ask_until_granted(
                keys, wait, LockHeldError,
                lambda chunk: self._client._acquire_all(names, self.id, chunk, owner, cancel=self._cancel, shared=shared, max_hold=max_hold),
                lambda err: self._forget_set(names, err), take)
            if max_hold is not None:
                for lk in locks:
                    lk._limit_hold(g["sent_at"] + max_hold - self.safety_margin)
            # each grant's own remaining max hold, as the server answered it
            for lk, x in zip(locks, g["grants"]):
                if x.get("hold_left") is not None:
                    lk._limit_hold(g["sent_at"] + x["hold_left"] - self.safety_margin)
            ls = LockSet(self, locks)
            if not ls.held:
                # granted after a wait whose only proof is older than the lease (see
                # _acquire_in): not claimed, and given back, each lock by its own token
                for lk in locks:
                    lk._mark_lost(f"{', '.join(names)} were granted but the session could not be proven alive")
                self._give_back_unproven(locks)
            return ls

    def _forget_set(self, names: List[str], cause: BaseException) -> None:
        if not self.is_open:
            return
        keys = [("lock", n) for n in names]
        self._watch(keys)
        try:
            with self._releasing_names(keys):
                self._client._release_all(names, self.id, budget=self._client.timeout)
        except RaftlockError as e:
            if not isinstance(e, SessionNotFoundError):
                self._client._warn(f"could not release {', '.join(names)} after an acquire-all that gave up ({cause!r}); they are freed when session {self.id} ends", e)

    def semaphore(self, name: str, limit: int, permits: int = 1, wait: float = 0, owner: Optional[str] = None,
                  max_hold: Optional[float] = None) -> SemaphoreGrant:
        """Takes ``permits`` of semaphore ``name`` of ``limit`` (1-10000) in this session
        (docs/contract.md §4 "Semaphores"), with lock()'s rules: SemaphoreFullError when the
        wait runs out, LimitMismatchError when it is busy under another limit."""
        if not isinstance(limit, int) or not 1 <= limit <= 10000:
            raise InvalidRequestError("invalid_request", f"limit must be a whole number in 1..10000, got {limit!r}")
        if not isinstance(permits, int) or not 1 <= permits <= limit:
            raise InvalidRequestError("invalid_request", f"permits must be a whole number in 1..limit ({limit}), got {permits!r}")

        def call(chunk: float) -> Dict[str, Any]:
            return self._client._acquire_semaphore(name, self.id, limit, permits, chunk, owner, max_hold, cancel=self._cancel)

        def make(g: Dict[str, Any]) -> Lock:
            return SemaphoreGrant(self, name, g["fencing_token"], g["ttl"], g["permits"], g["limit"])
        return self._acquire_in("semaphore", name, wait, max_hold, SemaphoreFullError, call, make)  # type: ignore[return-value]

    def campaign(self, name: str, value: str, wait: float = 0, owner: Optional[str] = None,
                 max_hold: Optional[float] = None, _own_session: bool = False) -> Leadership:
        """Campaigns in election ``name`` with ``value`` (up to 4 KiB of UTF-8): leads at once,
        or waits up to ``wait`` seconds in the FIFO queue (LockHeldError when it runs out,
        whose ``leader`` names the leader). lock()'s rules otherwise: a campaign that gives
        up withdraws. The Leadership's ``lost`` is set when the session can no longer be
        proven alive, on resign(), and when a keepalive answer no longer lists it."""
        if not isinstance(value, str):
            raise InvalidRequestError("invalid_request", f"value must be a string, got {type(value).__name__}")
        if len(value.encode("utf-8")) > 4096:
            raise InvalidRequestError("invalid_request", f"value must be at most 4096 bytes of UTF-8, got {len(value.encode('utf-8'))}")

        def call(chunk: float) -> Dict[str, Any]:
            return self._client._campaign(name, self.id, value, chunk, owner, max_hold, cancel=self._cancel)

        def make(g: Dict[str, Any]) -> Lock:
            return Leadership(self, name, g["fencing_token"], g["ttl"], g["value"], _own_session)
        return self._acquire_in("lock", name, wait, max_hold, LockHeldError, call, make)  # type: ignore[return-value]

    def _acquire_in(self, space: str, name: str, wait: float, max_hold: Optional[float], full: type,
                    call: Callable[[float], Dict[str, Any]], make: Callable[[Dict[str, Any]], Lock]) -> Lock:
        if not isinstance(wait, (int, float)) or wait < 0 or wait != wait:
            raise InvalidRequestError("invalid_request", f"wait must be a number of seconds >= 0, got {wait!r}")
        if max_hold is not None and (not isinstance(max_hold, (int, float)) or not 0.1 <= max_hold <= 2147483.647):
            raise InvalidRequestError("invalid_request", f"max_hold must be a number of seconds in 0.1..2147483.647, got {max_hold!r}")
        self._assert_open()
        keys = [(space, name)]

        def take(g: Dict[str, Any]) -> Lock:
            lk = make(g)
            self._track_taken([lk], name)
            return lk
        # counted in flight until the grant is in self._locks (or the cleanup has run)
        with self._acquiring_names(keys):
            g, lk = self._ask_until_granted(keys, wait, full, call, lambda err: self._forget_grant(space, name, err), take)
            if max_hold is not None:
                lk._limit_hold(g["sent_at"] + max_hold - self.safety_margin)
            # The server's word on the grant's own max hold: a grant an earlier request of
            # this session made (one given up on, delivered late) keeps that request's, which
            # this client may never have seen (docs/contract.md §4).
            if g.get("hold_left") is not None:
                lk._limit_hold(g["sent_at"] + g["hold_left"] - self.safety_margin)
            if not lk.held:
                # Granted after a wait whose only proof is older than the lease: holding it
                # cannot be proven, so it is not claimed (keepalives normally prevent this),
                # and it is given back rather than kept, unused, until the session ends.
                lk._mark_lost(f"{name} was granted but the session could not be proven alive")
                self._give_back_unproven([lk])
            return lk

    def _track_taken(self, locks: List[Lock], what: str) -> None:
        """The grant objects an acquire just got (``take``, under the session's lock): all
        lost if the session is no longer open (raises), else tracked. A second acquire of a
        grant the session holds returns the same grant, and the server keeps its first max
        hold, so each inherits the hold of an object that already carries its token."""
        if self._state != "open":
            for lk in locks:
                lk._mark_lost(f"session {self.id} was lost while acquiring {what}")
            raise self._ended_error()
        for lk in locks:
            for other in self._locks:
                if other.space == lk.space and other.fencing_token == lk.fencing_token:
                    lk._limit_hold(other.hold_until)
            self._locks.add(lk)

    def _ask_until_granted(self, keys: List[NameKey], wait: float, full: type, send: Callable[[float], Dict[str, Any]],
                           forget: Callable[[BaseException], None], take: Callable[[Dict[str, Any]], T]) -> Tuple[Dict[str, Any], T]:
        """The request loop of every acquire (a lock, a semaphore, a campaign, a lock set) of
        ``keys``: each request first waits for the releases of those names in flight in the
        session (_send_ask); a wait that ran out (``full``) before ``wait`` seconds is queued
        again; any other error calls ``forget`` when the server may have granted it, or when
        an overtaken answer before it may have left a grant standing, and propagates. A
        grant renews the session's proof from its send; an answer a release overtook is
        asked again (_Ask). ``take`` tracks a grant under the session's lock, in the same
        step as that check, so a release that starts later finds what it made. Returns the
        answer and what ``take`` returned."""
        until = time.monotonic() + wait
        outstanding = False  # an overtaken answer may have left a grant standing
        while True:
            chunk = min(MAX_WAIT_PER_REQUEST, max(0.0, until - time.monotonic()))
            ask = self._send_ask(keys)
            sent = time.monotonic()
            try:
                g = send(chunk)
            except Cancelled:
                self._answered(ask)
                raise self._ended_error() from None
            except BaseException as err:
                self._answered(ask)
                if isinstance(err, SessionNotFoundError):
                    self._mark_lost(f"the server no longer knows session {self.id}", err)
                if isinstance(err, full) and time.monotonic() < until - 0.001 and self.is_open \
                        and _wait_ran_out(time.monotonic() - sent, chunk):
                    outstanding = False
                    continue  # this wait ran out before ours: queue again
                if not definitely_not_applied(err) or (outstanding and not isinstance(err, full)):
                    forget(err)
                raise
            # A granted acquire renewed the session from its arrival, no earlier than its send.
            self._note_ack(g["sent_at"])
            with self._mu:
                self._answered(ask)
                if ask.overtaken:
                    outstanding = True
                    continue  # see _Ask: ask again
                return g, take(g)

    def keepalive(self) -> None:
        """One keepalive now (besides the automatic ones)."""
        self._assert_open()
        asked_at = time.monotonic()
        sent_at, grants = self._client._keepalive(self.id, deadline=self.proven_until, cancel=self._cancel)
        self._note_ack(sent_at)
        if grants is not None:
            self._after_keepalive(grants, asked_at)

    def close(self) -> List[str]:
        """Ends the session on the server (its locks are released at once) and stops the
        keepalives; every lock's ``lost`` is set first. Closing a lost session only tidies up."""
        with self._mu:
            if self._state == "closed":
                return []
            was_lost = self._state == "lost"
            self._end("closed", SessionLostError(self.id, f"session {self.id} was closed"),
                      f"its session {self.id} was closed")
        if was_lost:
            return []
        try:
            return self._client._close_session(self.id)
        except SessionNotFoundError:
            return []

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- internals -----------------------------------------------------------------

    def _assert_open(self) -> None:
        if not self.is_open:
            raise self._ended_error()

    def _ended_error(self) -> SessionLostError:
        return self.error or SessionLostError(self.id, f"session {self.id} is not open")

    def _forget(self, lk: Lock) -> None:
        with self._mu:
            self._locks.discard(lk)

    def _forget_grant(self, space: str, name: str, cause: BaseException) -> None:
        if not self.is_open:
            return  # a lost or closed session is closed on the server, which frees its grants
        self._watch([(space, name)])
        try:
            # a release without a token also withdraws a wait (docs/api.md "Release"); an
            # election is the lock of its name on the server
            with self._releasing_names([(space, name)]):
                if space == "semaphore":
                    self._client._release_semaphore(name, self.id, budget=self._client.timeout)
                else:
                    self._client._release(name, self.id, None, budget=self._client.timeout)
        except RaftlockError as e:
            if not isinstance(e, (SessionNotFoundError,)) and e.code != "not_holder":
                self._client._warn(f"could not release {name} after an acquire that gave up ({cause!r}); it is freed when session {self.id} ends", e)

    def _give_back_unproven(self, grants: List[Lock]) -> None:
        """Gives back grants, already marked lost, whose acquire was answered while the
        session could not be proven alive: a lock by its own fencing token (it touches no
        other grant and no wait), an election by resigning, a semaphore by name. Every other
        grant object of this session that the release ends too (any of the semaphore; one
        of the lock with the same token) is marked lost and forgotten first. New acquires
        of the names in this session wait for the releases."""
        if not self.is_open:
            return  # a lost or closed session is closed on the server, which frees its grants
        ended: List[Lock] = []
        with self._mu:
            for lk in grants:
                self._locks.discard(lk)
                others = [o for o in self._locks if o.space == lk.space and o.name == lk.name
                          and (lk.space == "semaphore" or o.fencing_token == lk.fencing_token)]
                for o in others:
                    self._locks.discard(o)
                ended.extend(others)
        for o in ended:
            o._mark_lost(f"{o._what()} (token {o.fencing_token}) was given back: it was granted again while session {self.id} could not be proven alive")
        with self._releasing_names([(lk.space, lk.name) for lk in grants]):
            for lk in grants:
                try:
                    lk._send_release(budget=self._client.timeout)
                except (NotHolderError, SessionNotFoundError):
                    pass  # nothing held, or the session is gone and its grants with it
                except RaftlockError as e:
                    self._client._warn(f"could not release {lk._what()} (token {lk.fencing_token}), granted while the session could not be "
                                       f"proven alive; it is freed when session {self.id} ends", e)

    def _watch(self, keys: List[NameKey]) -> None:
        """These names are released after an acquire that gave up. A copy of that acquire
        that the cluster applies after the release makes a grant no lock object knows, which
        the keepalives would keep alive until the session ends: watched, it is released by
        _sweep_late_grants."""
        with self._mu:
            now = time.monotonic()
            for k in keys:
                self._watched.add(k, now)

    @contextmanager
    def _acquiring_names(self, keys: List[NameKey]) -> Iterator[None]:
        """Counts an acquire of ``keys`` as in flight, so that a sweep leaves them alone.
        It first waits for any cleanup or sweep release of them in flight: a release without
        a token sent after this acquire's grant would free it."""
        with self._mu:
            while self._state == "open" and any(self._releasing.get(k) for k in keys):
                self._changed.wait()
            if self._state != "open":
                raise self._ended_error()
            _count(self._acquiring, keys, +1)
        try:
            yield
        finally:
            with self._mu:
                _count(self._acquiring, keys, -1)

    @contextmanager
    def _releasing_names(self, keys: List[NameKey], token: Optional[int] = None, keep: Tuple[Lock, ...] = ()) -> Iterator[None]:
        """A release of ``keys`` in this session in flight (token None: one that ends every
        grant of the names, else the grant of that token): every other grant object of the
        session that carries a grant it ends (those of ``keep`` aside: the releasing ones) is
        lost from now, the acquires of the names out now are overtaken (_Ask), and new ones
        wait until it is done."""
        with self._mu:
            self._start_release(keys)
            ended = [lk for lk in self._locks if lk not in keep and (lk.space, lk.name) in keys
                     and (token is None or lk.fencing_token == token)]
            for lk in ended:
                self._locks.discard(lk)
        for lk in ended:
            lk._mark_lost(f"{lk._what()} (token {lk.fencing_token}) was released in session {self.id}")
        try:
            yield
        finally:
            self._released(keys)

    def _start_release(self, keys: List[NameKey]) -> None:
        """A release of ``keys`` starts (caller holds self._mu; _released ends it)."""
        _count(self._releasing, keys, +1)
        for k in keys:
            for ask in self._asks.get(k, ()):
                ask.overtaken = True

    def _send_ask(self, keys: List[NameKey]) -> _Ask:
        """Waits until no release of ``keys`` is in flight in this session, then registers
        an acquire of them that goes out now (_Ask)."""
        with self._mu:
            while self._state == "open" and any(self._releasing.get(k) for k in keys):
                self._changed.wait()
            if self._state != "open":
                raise self._ended_error()
            ask = _Ask(keys)
            for k in keys:
                self._asks.setdefault(k, set()).add(ask)
            return ask

    def _answered(self, ask: _Ask) -> None:
        """The acquire's answer is in: a release that starts now no longer overtakes it."""
        with self._mu:
            for k in ask.keys:
                out = self._asks.get(k)
                if out is not None:
                    out.discard(ask)
                    if not out:
                        del self._asks[k]

    def _released(self, keys: List[NameKey]) -> None:
        with self._mu:
            _count(self._releasing, keys, -1)
            self._changed.notify_all()

    def _note_ack(self, sent_at: float) -> None:
        with self._mu:
            if self._state != "open":
                return
            until = sent_at + self.ttl - self.safety_margin
            if until <= self._proven:
                return
            self._proven = until
            self._last_ack = sent_at
            self._arm_lost_timer()

    def _arm_lost_timer(self) -> None:
        if self._lost_timer is not None:
            self._lost_timer.cancel()
        t = threading.Timer(max(0.0, self._proven - time.monotonic()), self._on_lost_timer)
        t.daemon = True
        self._lost_timer = t
        t.start()

    def _on_lost_timer(self) -> None:
        with self._mu:
            if self._state != "open":
                return
            if time.monotonic() < self._proven:  # extended meanwhile, or the timer fired early
                self._arm_lost_timer()
                return
        self._mark_lost(f"no keepalive of session {self.id} was acknowledged in time: the lease can no longer be proven "
                        f"(ttl {self.ttl} s, margin {self.safety_margin} s)")

    def _jittered(self) -> float:
        return max(0.001, self.keepalive_interval * (0.9 + 0.2 * self._client._transport.random()))

    def _keepalive_loop(self) -> None:
        wait = self._jittered()
        while True:
            if self.done.wait(wait):
                return
            deadline = self.proven_until
            asked_at = time.monotonic()
            try:
                # The call may keep retrying until the proof runs out; after that it is moot.
                sent_at, grants = self._client._keepalive(self.id, deadline=deadline, cancel=self._cancel)
            except Cancelled:
                return
            except SessionNotFoundError as e:
                self._mark_lost(f"the server no longer knows session {self.id} (expired or closed)", e)
                return
            except (PermissionDeniedError, InvalidRequestError) as e:
                self._mark_lost(f"keepalive of session {self.id} was refused: {e}", e)
                return
            except RaftlockError as e:
                if not self.is_open:
                    return
                self._client._warn(f"keepalive of session {self.id} failed; retrying", e)
                wait = min(self._jittered(), 0.2)
                continue
            self._note_ack(sent_at)
            if grants is not None:
                self._after_keepalive(grants, asked_at)
            wait = self._jittered()

    def _after_keepalive(self, grants: List[Dict[str, Any]], asked_at: float) -> None:
        """A keepalive answer that lists the session's grants: judge the grants this
        session holds by it, then sweep the late ones."""
        listed = listed_grants(grants)
        self._judge_grants(listed, asked_at)
        self._sweep_late_grants(listed)

    def _judge_grants(self, listed: List[ListedGrant], asked_at: float) -> None:
        """The keepalive answer lists the session's grants as the leader saw them after the
        keepalive arrived (docs/api.md "Keepalive answers"): every grant answered before it
        was sent that the list lacks was revoked or freed by its max hold. Matched by name
        and fencing token, locks and elections in one name space, semaphores in theirs."""
        held: Dict[Any, Optional[int]] = {(space, name, token): waiters for space, name, token, waiters in listed}
        with self._mu:
            if self._state != "open":
                return
            gone = [lk for lk in self._locks if lk._seen_at <= asked_at and (lk.space, lk.name, lk.fencing_token) not in held]
            for lk in gone:
                self._locks.discard(lk)
            counted = [(lk, held[(lk.space, lk.name, lk.fencing_token)]) for lk in self._locks if held.get((lk.space, lk.name, lk.fencing_token)) is not None]
        # contention (docs/contract.md §5): each grant's count of waiting requests
        for lk, n in counted:
            lk._note_waiters(n)  # type: ignore[arg-type]
        for lk in gone:
            lk._mark_lost(f"{lk._what()} (token {lk.fencing_token}) is no longer held by session {self.id}: revoked, or freed by its max hold")

    def _sweep_late_grants(self, listed: List[ListedGrant]) -> None:
        """After a keepalive whose answer lists the session's grants: releases each listed
        grant of a watched name (_watch) that no grant object of this session holds, while no
        acquire, cleanup or sweep release of the name is in flight here. Such a grant was
        made by a copy of a given-up acquire that the cluster applied after the cleanup
        release; nothing else would release it while the keepalives go on. Names never given
        up on are left alone: a grant taken with the one-shot calls in this session is the
        caller's. The releases run on threads of their own, so that a slow one never holds
        up the keepalives; new acquires of the name wait for them."""
        todo: List[Tuple[str, str, int]] = []
        with self._mu:
            if self._state != "open":
                return
            self._watched.expire(time.monotonic())
            if not self._watched:
                return
            for space, name, token, _ in listed:
                k = (space, name)
                if k not in self._watched or self._acquiring.get(k) or self._releasing.get(k) or self._holds(space, name, token):
                    continue
                # marked under the lock that the check ran under: an acquire that starts
                # after this waits for the release (_send_ask)
                self._start_release([k])
                todo.append((space, name, token))
        for space, name, token in todo:
            threading.Thread(target=self._release_late, args=(space, name, token), name=f"raftlock-sweep-{self.id[:8]}", daemon=True).start()

    def _holds(self, space: str, name: str, token: int) -> bool:
        """Does a grant object of this session hold ``name`` (a lock: with ``token``; a
        semaphore: any grant of it)? Caller holds self._mu."""
        return any(lk.space == space and lk.name == name and (space == "semaphore" or lk.fencing_token == token) for lk in self._locks)

    def _release_late(self, space: str, name: str, token: int) -> None:
        """One sweep release: a lock by the listed token (exact: it never touches another
        grant or a wait), a semaphore by name. The name stays watched: if this release
        fails, the next keepalive's list shows the grant again."""
        what = f"lock {name} (token {token})" if space == "lock" else f"semaphore {name}"
        try:
            if space == "semaphore":
                self._client._release_semaphore(name, self.id, budget=self._client.timeout)
            else:
                self._client._release(name, self.id, token, budget=self._client.timeout)
        except NotHolderError:
            return  # freed meanwhile: nothing to do
        except SessionNotFoundError as e:
            self._mark_lost(f"the server no longer knows session {self.id}", e)
            return
        except RaftlockError as e:
            if self.is_open:
                self._client._warn(f"could not release {what}, granted to session {self.id} by a late copy of an acquire that had given up; "
                                   "the next keepalive tries again", e)
            return
        finally:
            self._released([(space, name)])
        self._client._warn(f"released {what} granted to session {self.id} by a late copy of an acquire that had given up", None)

    def _end(self, state: str, err: SessionLostError, lock_why: str) -> None:
        # caller holds self._mu
        self._state = state
        self.error = err
        if self._lost_timer is not None:
            self._lost_timer.cancel()
        for lk in list(self._locks):
            lk._mark_lost(f"lock {lk.name} (token {lk.fencing_token}) is lost: {lock_why}")
        self._locks.clear()
        self._changed.notify_all()  # acquires waiting for a release in flight end now
        self.done.set()
        self._cancel.set(err)

    def _mark_lost(self, why: str, cause: Optional[BaseException] = None) -> None:
        """Final: every lock's ``lost`` and the session's are set; if the server may still
        have the session it is closed there (best effort, 2 s) so waiters get its locks now."""
        with self._mu:
            if self._state != "open":
                return
            err = SessionLostError(self.id, why)
            err.__cause__ = cause
            self._end("lost", err, why)
        self.lost.set()
        if not isinstance(cause, SessionNotFoundError):
            threading.Thread(target=self._close_quietly, daemon=True).start()

    def _close_quietly(self) -> None:
        try:
            self._client._close_session(self.id, budget=2.0)
        except RaftlockError:
            pass


__all__ = ["Session", "default_safety_margin", "LockLostError"]
