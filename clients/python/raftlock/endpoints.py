"""Which API URL to try next. Any node accepts any request (followers forward to the
leader), so calls go round-robin over the endpoints believed healthy. One that failed to
connect, or answered 503/429, rests: for 503/429 for the server's Retry-After, after
connection failures for an exponential backoff. When every endpoint rests, the caller
learns how long until the first one wakes.

Leader routing (README "Leader routing"): every answer names the leader its node knows
(the X-Raftlock-Leader header). When that URL is one of the endpoints, calls the leader
serves go to it first, sparing a follower's relay; while it rests, the rotation takes
over, and the next answer names the leader again. A hint naming any other address is
ignored: requests (and the token) only ever go to the endpoints the program listed."""

import email.utils
import threading
import time
from typing import Callable, List, Optional, Tuple
from urllib.parse import urlsplit

from .errors import InvalidRequestError

BASE_BACKOFF = 0.1
MAX_BACKOFF = 2.0
#: Retry-After beyond this is clamped: a misbehaving proxy must not park a client for hours.
MAX_RETRY_AFTER = 30.0


def normalize_endpoint(url: str) -> str:
    """``http://h:1/`` -> ``http://h:1``; refuses what is not an http(s) URL, naming it."""
    try:
        u = urlsplit(url.strip())
    except ValueError:
        u = None
    if u is None or not u.netloc:
        raise InvalidRequestError("invalid_request", f"endpoint {url!r} is not a URL (expected e.g. http://127.0.0.1:7001)")
    if u.scheme not in ("http", "https"):
        raise InvalidRequestError("invalid_request", f"endpoint {url!r} must be http:// or https://")
    return f"{u.scheme}://{u.netloc}{u.path.rstrip('/')}"


def parse_retry_after(value: Optional[str], fallback: float, now_wall: Optional[float] = None) -> float:
    """Retry-After in seconds: delay-seconds or an HTTP date (RFC 9110 10.2.3)."""
    if value is None or value.strip() == "":
        return fallback
    v = value.strip()
    if v.isdigit():
        return min(MAX_RETRY_AFTER, float(int(v)))
    try:
        at = email.utils.parsedate_to_datetime(v).timestamp()
    except (TypeError, ValueError, IndexError):
        return fallback
    now = time.time() if now_wall is None else now_wall
    return min(MAX_RETRY_AFTER, max(0.0, at - now))


class _State:
    __slots__ = ("url", "not_before", "failures")

    def __init__(self, url: str) -> None:
        self.url = url
        self.not_before = 0.0
        self.failures = 0


class EndpointSet:
    def __init__(self, urls: List[str], now: Callable[[], float] = time.monotonic, start_at: int = 0) -> None:
        if not urls:
            raise InvalidRequestError("invalid_request", "Client: endpoints must name at least one API URL")
        self._states = [_State(normalize_endpoint(u)) for u in urls]
        self._next = abs(int(start_at)) % len(self._states)
        self._now = now
        self._mu = threading.Lock()
        #: the endpoint the last hint named, if it is one of ours
        self._leader: Optional[_State] = None

    @property
    def urls(self) -> List[str]:
        return [s.url for s in self._states]

    @property
    def leader_url(self) -> Optional[str]:
        """The endpoint last named as the leader, or None."""
        with self._mu:
            return self._leader.url if self._leader is not None else None

    def note_leader(self, hint: Optional[str]) -> None:
        """An answer's leader hint: remembered when it names one of the endpoints; anything
        else (absent, malformed, another address) changes nothing."""
        if not hint:
            return
        try:
            url = normalize_endpoint(hint)
        except InvalidRequestError:
            return
        with self._mu:
            s = self._find(url)
            if s is not None:
                self._leader = s

    def pick(self, to_leader: bool = False) -> Tuple[str, float]:
        """With ``to_leader``, the known leader when it is ready (the rotation is not
        advanced); otherwise the next ready endpoint in rotation, else the one that wakes
        first (and the wait)."""
        with self._mu:
            t = self._now()
            if to_leader and self._leader is not None and self._leader.not_before <= t:
                return self._leader.url, 0.0
            n = len(self._states)
            best = None
            for i in range(n):
                j = (self._next + i) % n
                s = self._states[j]
                if s.not_before <= t:
                    self._next = (j + 1) % n
                    return s.url, 0.0
                if best is None or s.not_before < self._states[best].not_before:
                    best = j
            assert best is not None
            self._next = (best + 1) % n
            return self._states[best].url, max(0.0, self._states[best].not_before - t)

    def _find(self, url: str) -> Optional[_State]:
        for s in self._states:
            if s.url == url:
                return s
        return None

    def succeeded(self, url: str) -> None:
        with self._mu:
            s = self._find(url)
            if s:
                s.failures = 0
                s.not_before = 0.0

    def connect_failed(self, url: str, jitter: float = 1.0) -> None:
        with self._mu:
            s = self._find(url)
            if s:
                backoff = min(MAX_BACKOFF, BASE_BACKOFF * 2 ** min(s.failures, 10))
                s.failures += 1
                s.not_before = self._now() + backoff * jitter

    def retry_after(self, url: str, seconds: float) -> None:
        with self._mu:
            s = self._find(url)
            if s:
                s.not_before = self._now() + min(MAX_RETRY_AFTER, max(0.0, seconds))
