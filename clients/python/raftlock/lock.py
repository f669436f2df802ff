"""A held grant, as the client can prove it. ``lost`` (a threading.Event) is set the moment
the grant can no longer be proven held: its session's proven lease ran out, the server said
the session is gone, the session was closed, the grant was released, its max hold is about
to run out, or a keepalive answer no longer lists it (revoked by an administrator, or freed
by its max hold). Work done under the grant should pass ``fencing_token`` to every
resource it touches: ``lost`` says "stop", the token makes a late writer harmless when
stopping was not quick enough.

A Lock is a lock's grant (exclusive or shared); SemaphoreGrant holds permits of a
semaphore; Leadership leads an election (docs/contract.md §4) -- the same rules for all."""

import threading
import time
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence

from .errors import LockLostError, NotHolderError

if TYPE_CHECKING:
    from .session import Session


class Lock:
    #: the name space the grant lives in on the server: "lock" (locks and elections) or "semaphore"
    space = "lock"
    #: does its release end every grant of the name in the session (a semaphore's release,
    #: a resign), not only the one of its fencing token?
    _ends_by_name = False

    def __init__(self, session: "Session", name: str, fencing_token: int, ttl: float, mode: str = "exclusive") -> None:
        self.name = name
        self.fencing_token = fencing_token
        self.session_id = session.id
        self.ttl = ttl
        #: "exclusive" or "shared"
        self.mode = mode
        #: set when the lock can no longer be proven held
        self.lost = threading.Event()
        self.reason: Optional[LockLostError] = None
        #: time.monotonic() past which its max hold may have freed it (inf: no max hold)
        self.hold_until = float("inf")
        #: time.monotonic() when the grant was answered (revocation is judged after it)
        self._seen_at = time.monotonic()
        self._hold_timer: Optional[threading.Timer] = None
        self._session = session
        self._released = False
        self._mu = threading.Lock()
        #: requests waiting on the name at the session's last keepalive (docs/contract.md §5
        #: "Contention"; 0 until a keepalive says otherwise, or from a server that does not tell)
        self.waiters = 0
        self._on_contended: List[Callable[["Lock", int], None]] = []
        self._on_lost: List[Callable[["Lock"], None]] = []

    @property
    def held(self) -> bool:
        """True while not released and the session's proven lease has not run out. Check it
        right before an action that needs the lock."""
        now = time.monotonic()
        return not self.lost.is_set() and now < self._session.proven_until and now < self.hold_until

    @property
    def contended(self) -> bool:
        """Someone waits for this lock (as of the last keepalive): a long job can yield at a safe point."""
        return self.waiters > 0

    def on_contended(self, callback: Callable[["Lock", int], None]) -> None:
        """``callback(lock, waiters)`` runs (on the keepalive thread: keep it short) when a
        keepalive finds requests waiting on the lock where the one before found none."""
        self._on_contended.append(callback)

    def _note_waiters(self, n: int) -> None:
        was, self.waiters = self.waiters, n
        if was == 0 and n > 0 and not self.lost.is_set():
            for cb in list(self._on_contended):
                try:
                    cb(self, n)
                except Exception as e:  # noqa: BLE001 -- a callback's error must not stop the keepalives
                    self._session._client._warn(f"a contended callback of {self._what()} failed", e)

    def assert_held(self) -> None:
        """Raises LockLostError unless ``held``."""
        if self.held:
            return
        raise self.reason or LockLostError(self.name, self.fencing_token, f"{self._what()} (token {self.fencing_token}) can no longer be proven held")

    def check(self) -> bool:
        """The contract's token check (Chubby's CheckSequencer): is this token still the holder's?"""
        return self._session._client.check_token(self.name, self.fencing_token)

    def release(self) -> None:
        """Gives the grant up. ``lost`` is set BEFORE the request is sent: from then on the
        client cannot prove it holds it. Releasing twice, or after a loss, does nothing."""
        with self._mu:
            if self._released:
                return
            self._released = True
            was_lost = self.lost.is_set()
        self._mark_lost(f"{self._what()} (token {self.fencing_token}) was released")
        # counted as a release in flight from before the session forgets the grant: a
        # keepalive may still list it, and the late-grant sweep must leave it to this release
        with self._session._releasing_names([(self.space, self.name)], None if self._ends_by_name else self.fencing_token, keep=(self,)):
            self._session._forget(self)
            if not was_lost and self._session.is_open:
                self._send_release()

    def _send_release(self, budget: Optional[float] = None) -> None:
        self._session._client._release(self.name, self.session_id, self.fencing_token, budget=budget)

    def _what(self) -> str:
        return f"lock {self.name}"

    def _limit_hold(self, until: float) -> None:
        """the grant's max hold ends no sooner than ``until``: ``lost`` is set then"""
        if until >= self.hold_until:
            return
        self.hold_until = until
        if self._hold_timer is not None:
            self._hold_timer.cancel()
        t = threading.Timer(max(0.0, until - time.monotonic()), self._mark_lost,
                            (f"{self._what()} (token {self.fencing_token}) reached its max hold: the server frees it then even while the session lives",))
        t.daemon = True
        self._hold_timer = t
        t.start()

    def _mark_lost(self, why: str) -> None:
        with self._mu:
            if self.lost.is_set():
                return
            self.reason = LockLostError(self.name, self.fencing_token, why)
            self.lost.set()
            if self._hold_timer is not None:
                self._hold_timer.cancel()
        for cb in list(self._on_lost):
            cb(self)

    def _detach(self) -> Optional[bool]:
        """A lock set's release (LockSet.release): marks it released and sets ``lost`` before
        the request is sent. None: released already; else whether it was lost before."""
        with self._mu:
            if self._released:
                return None
            self._released = True
            was_lost = self.lost.is_set()
        self._mark_lost(f"{self._what()} (token {self.fencing_token}) was released")
        self._session._forget(self)
        return was_lost

    def __enter__(self) -> "Lock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, fencing_token={self.fencing_token}, session_id={self.session_id!r}, held={self.held})"


class LockSet:
    """Several locks granted together by one acquire-all (docs/contract.md §5 "Lock sets"):
    ``locks`` in the order the names were asked for, each a Lock with its own fencing token;
    ``fencing_tokens`` maps name to token; ``lost`` is set the moment ANY of them can no
    longer be proven held. ``release()`` gives them all back in one request; ``with``
    releases on the way out."""

    def __init__(self, session: "Session", locks: Sequence[Lock]) -> None:
        self.locks: List[Lock] = list(locks)
        self.session_id = session.id
        self.fencing_tokens: Dict[str, int] = {lk.name: lk.fencing_token for lk in self.locks}
        #: set when any lock of the set can no longer be proven held
        self.lost = threading.Event()
        self._session = session
        self._released = False
        self._mu = threading.Lock()
        for lk in self.locks:
            lk._on_lost.append(lambda _lk: self.lost.set())
            if lk.lost.is_set():
                self.lost.set()

    def lock(self, name: str) -> Lock:
        for lk in self.locks:
            if lk.name == name:
                return lk
        raise KeyError(f"lock {name} is not in this set")

    @property
    def held(self) -> bool:
        """Every lock of the set is proven held right now."""
        return all(lk.held for lk in self.locks)

    @property
    def contended(self) -> bool:
        return any(lk.contended for lk in self.locks)

    @property
    def reason(self) -> Optional[LockLostError]:
        for lk in self.locks:
            if lk.lost.is_set():
                return lk.reason
        return None

    def on_contended(self, callback: Callable[[Lock, int], None]) -> None:
        """``callback(lock, waiters)`` when a lock of the set becomes contended."""
        for lk in self.locks:
            lk.on_contended(callback)

    def assert_held(self) -> None:
        for lk in self.locks:
            lk.assert_held()

    def release(self) -> None:
        """Sets ``lost`` on every lock, then releases them in one release-all (a lock lost
        meanwhile by its token alone, so a later grant of its name stays). Twice, or after
        the session ended, does nothing."""
        with self._mu:
            if self._released:
                return
            self._released = True
        # a release in flight of every name (as Lock.release)
        with self._session._releasing_names([(lk.space, lk.name) for lk in self.locks], keep=tuple(self.locks)):
            self._release()

    def _release(self) -> None:
        batch: List[str] = []
        lost: List[Lock] = []
        for lk in self.locks:
            was_lost = lk._detach()
            if was_lost is None:
                continue
            if was_lost:
                lost.append(lk)
            else:
                batch.append(lk.name)
        if not self._session.is_open:
            return
        if batch:
            self._session._client._release_all(batch, self.session_id)
        for lk in lost:
            try:
                self._session._client._release(lk.name, self.session_id, lk.fencing_token)
            except NotHolderError:
                pass

    def __enter__(self) -> "LockSet":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"LockSet({self.fencing_tokens!r}, session_id={self.session_id!r}, held={self.held})"


class SemaphoreGrant(Lock):
    """``permits`` of semaphore ``name``, whose limit was ``limit`` when granted. A release
    gives back every permit this session holds of it."""

    space = "semaphore"
    _ends_by_name = True

    def __init__(self, session: "Session", name: str, fencing_token: int, ttl: float, permits: int, limit: int) -> None:
        super().__init__(session, name, fencing_token, ttl)
        self.permits = permits
        self.limit = limit

    def _send_release(self, budget: Optional[float] = None) -> None:
        self._session._client._release_semaphore(self.name, self.session_id, budget=budget)

    def _what(self) -> str:
        return f"semaphore {self.name}"

    def check(self) -> bool:
        raise NotImplementedError("the server offers no fencing-token check for semaphores; check the token at the resource")


class Leadership(Lock):
    """This session's lead of election ``name``: ``fencing_token`` is the leader's epoch,
    ``value`` the published value. ``resign()`` steps down (the next candidate leads at
    once); ``with`` resigns on the way out."""

    _ends_by_name = True

    def __init__(self, session: "Session", name: str, fencing_token: int, ttl: float, value: str, own_session: bool = False) -> None:
        super().__init__(session, name, fencing_token, ttl)
        self.value = value
        self._own_session = own_session

    def _what(self) -> str:
        return f"leadership of election {self.name}"

    def _send_release(self, budget: Optional[float] = None) -> None:
        try:
            self._session._client._resign(self.name, self.session_id, budget=budget)
        except NotHolderError:
            pass  # nothing is left to give up

    def proclaim(self, value: str) -> None:
        """Publishes a new value. LockLostError when the leadership can no longer be proven;
        a NotHolderError from the server (no longer leader) also sets ``lost``."""
        self.assert_held()
        try:
            self.value = self._session._client._proclaim(self.name, self.session_id, value)
        except NotHolderError:
            self._mark_lost(f"election {self.name}: session {self.session_id} no longer leads (resigned, revoked or ended)")
            raise

    def resign(self) -> None:
        """Steps down: ``lost`` is set first, then the next candidate leads. Resigning twice,
        or a leadership already lost, does nothing. With the session Client.campaign opened
        for it, that session is closed too."""
        try:
            self.release()
        finally:
            if self._own_session:
                try:
                    self._session.close()
                except Exception as e:  # noqa: BLE001 -- the session expires after its ttl
                    self._session._client._warn(f"could not close the session of election {self.name} after resigning (it will expire after its ttl)", e)

    def __exit__(self, *exc: object) -> None:
        self.resign()
