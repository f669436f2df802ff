"""A held lock, as the client can prove it. ``lost`` (a threading.Event) is set the moment
the lock can no longer be proven held: its session's proven lease ran out, the server said
the session is gone, the session was closed, or the lock was released. Work done under the
lock should pass ``fencing_token`` to every resource it touches: ``lost`` says "stop", the
token makes a late writer harmless when stopping was not quick enough."""

import threading
import time
from typing import TYPE_CHECKING, Optional

from .errors import LockLostError

if TYPE_CHECKING:
    from .session import Session


class Lock:
    def __init__(self, session: "Session", name: str, fencing_token: int, ttl: float) -> None:
        self.name = name
        self.fencing_token = fencing_token
        self.session_id = session.id
        self.ttl = ttl
        #: set when the lock can no longer be proven held
        self.lost = threading.Event()
        self.reason: Optional[LockLostError] = None
        self._session = session
        self._released = False
        self._mu = threading.Lock()

    @property
    def held(self) -> bool:
        """True while not released and the session's proven lease has not run out. Check it
        right before an action that needs the lock."""
        return not self.lost.is_set() and time.monotonic() < self._session.proven_until

    def assert_held(self) -> None:
        """Raises LockLostError unless ``held``."""
        if self.held:
            return
        raise self.reason or LockLostError(self.name, self.fencing_token, f"lock {self.name} (token {self.fencing_token}) can no longer be proven held")

    def check(self) -> bool:
        """The contract's token check (Chubby's CheckSequencer): is this token still the holder's?"""
        return self._session._client.check_token(self.name, self.fencing_token)

    def release(self) -> None:
        """Gives the lock up. ``lost`` is set BEFORE the request is sent: from then on the
        client cannot prove it holds the lock. Releasing twice, or after a loss, does nothing."""
        with self._mu:
            if self._released:
                return
            self._released = True
            was_lost = self.lost.is_set()
        self._mark_lost(f"lock {self.name} (token {self.fencing_token}) was released")
        self._session._forget(self)
        if not was_lost and self._session.is_open:
            self._session._client._release(self.name, self.session_id, self.fencing_token)

    def _mark_lost(self, why: str) -> None:
        with self._mu:
            if self.lost.is_set():
                return
            self.reason = LockLostError(self.name, self.fencing_token, why)
            self.lost.set()

    def __repr__(self) -> str:
        return f"Lock(name={self.name!r}, fencing_token={self.fencing_token}, session_id={self.session_id!r}, held={self.held})"
