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
from typing import TYPE_CHECKING, Optional

from .errors import LockLostError, NotHolderError

if TYPE_CHECKING:
    from .session import Session


class Lock:
    #: the name space the grant lives in on the server: "lock" (locks and elections) or "semaphore"
    space = "lock"

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

    @property
    def held(self) -> bool:
        """True while not released and the session's proven lease has not run out. Check it
        right before an action that needs the lock."""
        now = time.monotonic()
        return not self.lost.is_set() and now < self._session.proven_until and now < self.hold_until

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
        self._session._forget(self)
        if not was_lost and self._session.is_open:
            self._send_release()

    def _send_release(self) -> None:
        self._session._client._release(self.name, self.session_id, self.fencing_token)

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

    def __enter__(self) -> "Lock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, fencing_token={self.fencing_token}, session_id={self.session_id!r}, held={self.held})"


class SemaphoreGrant(Lock):
    """``permits`` of semaphore ``name``, whose limit was ``limit`` when granted. A release
    gives back every permit this session holds of it."""

    space = "semaphore"

    def __init__(self, session: "Session", name: str, fencing_token: int, ttl: float, permits: int, limit: int) -> None:
        super().__init__(session, name, fencing_token, ttl)
        self.permits = permits
        self.limit = limit

    def _send_release(self) -> None:
        self._session._client._release_semaphore(self.name, self.session_id)

    def _what(self) -> str:
        return f"semaphore {self.name}"

    def check(self) -> bool:
        raise NotImplementedError("the server offers no fencing-token check for semaphores; check the token at the resource")


class Leadership(Lock):
    """This session's lead of election ``name``: ``fencing_token`` is the leader's epoch,
    ``value`` the published value. ``resign()`` steps down (the next candidate leads at
    once); ``with`` resigns on the way out."""

    def __init__(self, session: "Session", name: str, fencing_token: int, ttl: float, value: str, own_session: bool = False) -> None:
        super().__init__(session, name, fencing_token, ttl)
        self.value = value
        self._own_session = own_session

    def _what(self) -> str:
        return f"leadership of election {self.name}"

    def _send_release(self) -> None:
        try:
            self._session._client._resign(self.name, self.session_id)
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
