"""One logical REST call, retried across endpoints until it gets a definitive answer or its
budget runs out. What makes a retry safe is declared per call:

- ``read``: no effect, retry freely;
- ``renewal``: keepalive/renew, repeating one only renews again;
- ``keyed``: a change; every attempt carries the SAME Idempotency-Key, so the server
  applies it at most once and a retry returns the first answer.

A connection that never opened means nothing was sent. An attempt that timed out or broke
after sending, a 504 or a 502 has an unknown outcome: if the budget runs out the caller
gets OutcomeUnknownError, never "unavailable". 503 and 429 said "nothing applied, try
later": that endpoint rests for its Retry-After and the next one is tried."""

import http.client
import json
import random
import socket
import ssl
import threading
import time
from typing import Any, Callable, Dict, Optional, Union
from urllib.parse import unquote, urlsplit

from .endpoints import EndpointSet, parse_retry_after
from .errors import OutcomeUnknownError, RaftlockError, TooManyRequestsError, UnavailableError, error_from_response

MIN_ATTEMPT = 0.025
MAX_BODY = 32 * 1024 * 1024

Body = Union[None, Dict[str, Any], Callable[[float], Dict[str, Any]]]


class Cancelled(Exception):
    """Raised inside the transport when a Cancel fired; the caller maps it to its reason."""


class Cancel:
    """Cuts an in-flight call short (a session that is lost stops its lock's wait): the
    socket of the attempt in flight is shut down and sleeps end."""

    def __init__(self) -> None:
        self._mu = threading.Lock()
        self._event = threading.Event()
        self._conns: set = set()
        self.reason: Optional[BaseException] = None

    @property
    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self, reason: BaseException) -> None:
        with self._mu:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            conns = list(self._conns)
        for c in conns:
            _shutdown(c)

    def wait(self, seconds: float) -> bool:
        return self._event.wait(seconds)

    def register(self, conn: http.client.HTTPConnection) -> None:
        with self._mu:
            self._conns.add(conn)
            cut = self._event.is_set()
        if cut:
            _shutdown(conn)

    def unregister(self, conn: http.client.HTTPConnection) -> None:
        with self._mu:
            self._conns.discard(conn)


def _shutdown(conn: http.client.HTTPConnection) -> None:
    try:
        if conn.sock is not None:
            conn.sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class Answer:
    def __init__(self, status: int, body: bytes, endpoint: str, sent_at: float) -> None:
        self.status = status
        self.body = body
        self.endpoint = endpoint
        #: monotonic time to base lease arithmetic on: when the answered attempt was sent or,
        #: for a keyed call, when its FIRST attempt was sent (a retry may return the stored
        #: answer of the first attempt, whose effect dates from then)
        self.sent_at = sent_at

    def json(self, what: str) -> Dict[str, Any]:
        try:
            v = json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            v = None
        if not isinstance(v, dict):
            from .errors import InvalidRequestError
            raise InvalidRequestError("bad_response", f"{self.endpoint}: unexpected answer to {what}: not a JSON object", status=self.status, endpoint=self.endpoint)
        return v


class Transport:
    def __init__(self, endpoints: EndpointSet, timeout: float, retry_budget: float, token: Optional[str],
                 ssl_context: Optional[ssl.SSLContext], rng: random.Random, leader_routing: bool = True) -> None:
        self.endpoints = endpoints
        #: send calls the leader serves to the leader the answers name (endpoints.py)
        self.leader_routing = leader_routing
        self.timeout = timeout
        self.retry_budget = retry_budget
        self.token = token
        self.ssl_context = ssl_context
        self._rng = rng
        self._rmu = threading.Lock()

    def random(self) -> float:
        with self._rmu:
            return self._rng.random()

    def call(self, method: str, path: str, mode: str, body: Body = None, key: Optional[str] = None,
             wait: float = 0.0, deadline: Optional[float] = None, cancel: Optional[Cancel] = None,
             any_node: bool = False) -> Answer:
        """``any_node``: served by whichever node answers (a stale read), never routed to the leader."""
        start = time.monotonic()
        if deadline is None:
            deadline = start + self.retry_budget + wait
        outcome_unknown = False
        last: Optional[RaftlockError] = None
        first_sent: Optional[float] = None
        attempt = 0
        while True:
            if cancel is not None and cancel.is_set:
                raise Cancelled()
            # Only the endpoint changes with leader routing: what a failure means, and
            # whether the call may be repeated, stays exactly as below (the same rules on
            # any node).
            url, rest = self.endpoints.pick(self.leader_routing and not any_node)
            remaining = deadline - time.monotonic()
            if remaining <= 0 and attempt > 0:
                break
            if rest > 0:
                # Honour the rest the endpoints asked for. A lease renewal must get its last
                # tries in before the proof runs out, so it never sleeps more than half of
                # what is left; any other call gives up when asked to wait past its budget.
                if mode == "renewal":
                    rest = min(rest, max(0.0, remaining / 2))
                elif attempt > 0 and rest >= remaining:
                    break
                else:
                    rest = min(rest, max(0.0, remaining - MIN_ATTEMPT))
                if cancel is not None:
                    if cancel.wait(rest):
                        raise Cancelled()
                else:
                    time.sleep(rest)
            if attempt > 0 and deadline - time.monotonic() < MIN_ATTEMPT:
                break
            if first_sent is None:
                first_sent = time.monotonic()
            attempt += 1
            kind, result, retry_after = self._attempt(url, method, path, body, key, wait, start, deadline, cancel)
            if kind == "answer":
                a = result
                assert isinstance(a, Answer)
                # 408: the server's HTTP layer did not receive the request whole and never
                # ran it; it says nothing of an earlier attempt: retry, as for 503
                if a.status < 500 and a.status not in (429, 408):
                    self.endpoints.succeeded(url)
                    if mode == "keyed":
                        a.sent_at = first_sent
                    if 200 <= a.status < 300:
                        return a
                    # a definite answer, never retried (422 idempotency_key_reused included)
                    raise error_from_response(a.status, a.body, url, key)
                err = error_from_response(a.status, a.body, url)
                if a.status in (503, 429):
                    self.endpoints.retry_after(url, parse_retry_after(retry_after, 1.0))
                elif a.status == 408:
                    self.endpoints.retry_after(url, 0.05)  # the request did not get through: send it again
                elif a.status in (504, 502):
                    outcome_unknown = True
                    self.endpoints.retry_after(url, 0.05)  # the server already waited; do not spin
                else:
                    raise err  # 500 and friends: a server bug; repeating it would only hide it
                last = err
            else:
                if kind == "unknown":
                    outcome_unknown = True
                self.endpoints.connect_failed(url, 0.5 + self.random())
                assert isinstance(result, RaftlockError)
                last = result
            if time.monotonic() >= deadline:
                break
        what = f"{method} {unquote(path)}"
        why = last.message if last is not None else "no attempt could be made"
        kw = {"endpoint": last.endpoint if last else None, "status": last.status if last else None}
        if outcome_unknown and mode == "keyed":
            raise OutcomeUnknownError(f"{what}: outcome unknown after retrying ({why}); retrying with Idempotency-Key {key} is safe", key, **kw) from last
        if isinstance(last, TooManyRequestsError):
            raise TooManyRequestsError(f"{what}: {why}", **kw) from last
        raise UnavailableError(f"{what}: no endpoint gave an answer in time (last: {why})", **kw) from last

    def _attempt(self, url: str, method: str, path: str, body: Body, key: Optional[str], wait: float,
                 start: float, deadline: float, cancel: Optional[Cancel]):
        sent_at = time.monotonic()
        budget = max(0.001, min(self.timeout + wait, deadline - sent_at))
        headers = {"User-Agent": "raftlock-client-python", "Accept": "application/json"}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        if key is not None:
            headers["Idempotency-Key"] = key
        data = None
        if body is not None:
            b = body(sent_at - start) if callable(body) else body
            data = json.dumps(b).encode("utf-8")
            headers["Content-Type"] = "application/json"
        u = urlsplit(url)
        if u.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(u.netloc, timeout=budget, context=self.ssl_context)
        else:
            conn = http.client.HTTPConnection(u.netloc, timeout=budget)
        if cancel is not None:
            cancel.register(conn)
        try:
            try:
                conn.connect()
                conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except (OSError, ssl.SSLError) as e:  # refused, unreachable, DNS, TLS refused: nothing sent
                if cancel is not None and cancel.is_set:
                    raise Cancelled() from e
                return "not_sent", UnavailableError(f"{url}: {_describe(e, budget)}", endpoint=url), None
            try:
                conn.request(method, u.path + path, body=data, headers=headers)
                res = conn.getresponse()
                if self.leader_routing:
                    self.endpoints.note_leader(res.getheader("X-Raftlock-Leader"))
                raw = _read_body(res)
            except (OSError, http.client.HTTPException) as e:
                if cancel is not None and cancel.is_set:
                    raise Cancelled() from e
                return "unknown", UnavailableError(f"{url}: {_describe(e, budget)}", endpoint=url), None
            if len(raw) > MAX_BODY:
                return "unknown", UnavailableError(f"{url}: answer body over {MAX_BODY} bytes", endpoint=url), None
            return "answer", Answer(res.status, raw, url, sent_at), res.getheader("Retry-After")
        finally:
            if cancel is not None:
                cancel.unregister(conn)
            conn.close()


def _read_body(res: http.client.HTTPResponse) -> bytes:
    """The body, or MAX_BODY + 1 bytes of it. (Not res.read(MAX_BODY + 1): before Python
    3.10 that allocates the whole amount for every answer.)"""
    if res.length is not None:
        return res.read() if res.length <= MAX_BODY else res.read(MAX_BODY + 1)
    chunks, size = [], 0
    while size <= MAX_BODY:
        c = res.read(65536)
        if not c:
            break
        chunks.append(c)
        size += len(c)
    return b"".join(chunks)


def _describe(e: BaseException, budget: float) -> str:
    if isinstance(e, socket.timeout):
        return f"no answer within {round(budget * 1000)} ms"
    return f"{type(e).__name__}: {e}"
