"""client.watch(prefix) and client.observe(name): iterators over GET /v1/watch
(docs/contract.md §4 "Watch") that survive node failures.

No event lost or repeated across a reconnect: every node has the same events in the same
order, so the iterator remembers the index of the last event it gave out and how many
events of that index it gave (one command's events share an index and a cut can fall
between them). It resumes after the index before, and skips the ones it already gave. A
resume point no endpoint keeps any more ends the iterator with CompactedError."""

import http.client
import json
import socket
import ssl
import threading
from typing import Any, Dict, Iterator, List, Optional, Tuple
from urllib.parse import urlencode, urlsplit

from .errors import CompactedError, InvalidRequestError, RaftlockError, error_from_response
from .endpoints import parse_retry_after

CONNECT_TIMEOUT = 5.0
MAX_FRAME = 1024 * 1024

Event = Dict[str, Any]


def parse_frame(lines: List[str]) -> Tuple[str, Optional[Event]]:
    """One SSE frame -> ("event", data), ("marker", {"event": "synced", "index"}) or
    ("none", None) for a comment or an unknown frame."""
    fid = name = None
    data: Optional[str] = None
    for line in lines:
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "id":
            fid = value
        elif field == "event":
            name = value
        elif field == "data":
            data = value if data is None else f"{data}\n{value}"
    if name is None and data is None:
        if fid is None or not fid.isdigit():
            return "none", None
        return "marker", {"event": "synced", "index": int(fid)}
    if name is None or data is None:
        return "none", None
    try:
        d = json.loads(data)
    except ValueError:
        raise InvalidRequestError("bad_response", f"watch: event data is not JSON: {data[:100]}") from None
    if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not isinstance(d.get("kind"), str) or not isinstance(d.get("index"), int):
        raise InvalidRequestError("bad_response", f"watch: malformed event data: {data[:100]}")
    d["event"] = name
    return "event", d


def watch_batches(transport: Any, prefix: str, from_index: Optional[int], idle_timeout: float,
                  stop: Optional[threading.Event]) -> Iterator[List[Event]]:
    """The feed in batches: the events of one chunk of the stream (the server writes one
    command's events together)."""
    eps = transport.endpoints
    last = from_index
    given_at_last = 0  # events of index `last` already given out (0: resume strictly after it)
    compacted_by: set = set()
    while True:
        if stop is not None and stop.is_set():
            return
        url, rest = eps.pick()
        if rest > 0:
            if stop is not None:
                if stop.wait(rest):
                    return
            else:
                threading.Event().wait(rest)
        q: Dict[str, str] = {}
        if prefix:
            q["prefix"] = prefix
        if last is not None:
            q["from_index"] = str(last - 1 if given_at_last > 0 and last > 0 else last)
        path = "/v1/watch" + (f"?{urlencode(q)}" if q else "")
        u = urlsplit(url)
        if u.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(u.netloc, timeout=CONNECT_TIMEOUT, context=transport.ssl_context)
        else:
            conn = http.client.HTTPConnection(u.netloc, timeout=CONNECT_TIMEOUT)
        try:
            headers = {"User-Agent": "raftlock-client-python", "Accept": "text/event-stream"}
            if transport.token is not None:
                headers["Authorization"] = f"Bearer {transport.token}"
            try:
                conn.request("GET", u.path + path, headers=headers)
                res = conn.getresponse()
            except (OSError, http.client.HTTPException, ssl.SSLError):
                eps.connect_failed(url, 0.5 + transport.random())
                continue
            if res.status != 200:
                body = res.read(65536)
                err = error_from_response(res.status, body, url)
                if isinstance(err, CompactedError):
                    # another node may still keep it (one that restored a snapshot keeps less)
                    compacted_by.add(url)
                    if len(compacted_by) >= len(eps.urls):
                        raise err
                    eps.connect_failed(url, 1.0)
                    continue
                if res.status in (503, 429) or res.status >= 500:
                    eps.retry_after(url, parse_retry_after(res.getheader("Retry-After"), 1.0))
                    continue
                raise err  # 400, 401, 403: asking again cannot help
            eps.succeeded(url)
            compacted_by = set()
            if conn.sock is not None:
                conn.sock.settimeout(idle_timeout)  # a silent stream is dead: resume elsewhere
            # a resume after last - 1 re-sends the whole group of last: skip what was given
            resume_index, to_skip = last, given_at_last
            frame: List[str] = []
            size = 0
            batch: List[Event] = []
            while True:
                try:
                    raw = res.readline(MAX_FRAME + 1)
                except (OSError, http.client.HTTPException, ValueError):
                    break
                if not raw:
                    break  # the stream ended (a node shutting down, a slow-reader cut)
                if stop is not None and stop.is_set():
                    return
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if line:
                    size += len(line)
                    if size > MAX_FRAME:
                        raise InvalidRequestError("bad_response", f"{url}: a watch frame over {MAX_FRAME} bytes")
                    frame.append(line)
                    continue
                kind, e = parse_frame(frame)
                frame, size = [], 0
                if kind == "marker":
                    assert e is not None
                    if last is None or e["index"] > last:
                        last, given_at_last = e["index"], 0
                    batch.append(e)
                elif kind == "event":
                    assert e is not None
                    if e["event"] == "state":
                        batch.append(e)
                    elif to_skip > 0 and e["index"] == resume_index:
                        to_skip -= 1
                    else:
                        to_skip = 0
                        if last is not None and e["index"] < last:
                            pass  # not from a sound node: never twice
                        else:
                            if e["index"] == last:
                                given_at_last += 1
                            else:
                                last, given_at_last = e["index"], 1
                            batch.append(e)
                if batch and getattr(res, "chunk_left", None) in (None, 0):
                    yield batch
                    batch = []
            if batch:
                yield batch
            eps.connect_failed(url, 0.5 + transport.random())
        except socket.timeout:
            eps.connect_failed(url, 0.5 + transport.random())
        finally:
            conn.close()


def watch_events(transport: Any, prefix: str, from_index: Optional[int], idle_timeout: float,
                 stop: Optional[threading.Event]) -> Iterator[Event]:
    for batch in watch_batches(transport, prefix, from_index, idle_timeout, stop):
        yield from batch


def observe_leaders(transport: Any, name: str, idle_timeout: float, stop: Optional[threading.Event]) -> Iterator[Optional[Dict[str, Any]]]:
    leader: Optional[Dict[str, Any]] = None
    given: Any = object()  # nothing given yet
    synced = False
    at: Optional[int] = None

    def key(ld: Optional[Dict[str, Any]]) -> Any:
        return None if ld is None else (ld["session_id"], ld["fencing_token"], ld["value"])

    def step(out: List[Optional[Dict[str, Any]]]) -> None:
        nonlocal given
        if not synced or key(leader) == given:
            return
        given = key(leader)
        out.append(None if leader is None else dict(leader))

    for batch in watch_batches(transport, name, None, idle_timeout, stop):
        out: List[Optional[Dict[str, Any]]] = []
        for e in batch:
            if e["event"] == "synced":
                synced = True
                continue
            if e.get("kind") != "election" or e.get("name") != name:
                continue
            if e["event"] != "state" and at is not None and e["index"] != at:
                step(out)
            at = e["index"]
            sid = e.get("session_id")
            if e["event"] in ("state", "acquired"):
                leader = {"session_id": sid or "", "value": e.get("value", ""), "fencing_token": e.get("fencing_token", 0), "index": e["index"]}
            elif e["event"] == "proclaimed":
                if leader is not None and (sid is None or sid == leader["session_id"]):
                    leader = dict(leader, value=e.get("value", ""), index=e["index"])
            elif e["event"] in ("resigned", "released", "expired", "revoked"):
                if leader is not None and (sid is None or sid == leader["session_id"]):
                    leader = None
        # a batch normally ends on a whole command: the server writes one command's events at once
        step(out)
        yield from out


__all__ = ["watch_events", "observe_leaders", "parse_frame", "RaftlockError"]
