"""A raftlock API stand-in for unit tests: http.server on a free loopback port; each test
sets ``handler``; every request is recorded with its arrival time."""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional


class Req:
    def __init__(self, method: str, path: str, headers: Dict[str, str], body: Any, at: float) -> None:
        self.method, self.path, self.headers, self.body, self.at = method, path, headers, body, at

    @property
    def key(self) -> Optional[str]:
        return self.headers.get("idempotency-key")


class Reply:
    def __init__(self, status: int, body: Any, headers: Optional[Dict[str, str]] = None, delay: float = 0) -> None:
        self.status, self.body, self.headers, self.delay = status, body, headers or {}, delay


class Stream:
    """A text/event-stream answer: each chunk is written (and flushed) as one HTTP chunk;
    then the stream ends, or with ``hold`` stays open until the client goes or the stub closes."""

    def __init__(self, chunks: List[str], hold: bool = False) -> None:
        self.chunks, self.hold = chunks, hold


def err(code: str, msg: str = "x", **extra: Any) -> Dict[str, Any]:
    return {"error": dict(code=code, message=msg, **extra)}


def healthy(ttl_ms: int = 600) -> Callable[[Req], Reply]:
    lock = threading.Lock()
    state = {"token": 10}

    def h(r: Req) -> Reply:
        if r.method == "POST" and r.path == "/v1/sessions":
            return Reply(201, {"session_id": "s1", "ttl_ms": ttl_ms})
        if r.path.endswith("/keepalive"):
            return Reply(200, {"session_id": "s1", "ttl_ms": ttl_ms})
        if r.method == "DELETE":
            return Reply(200, {"released": []})
        if r.path.endswith("/acquire"):
            with lock:
                state["token"] += 1
                t = state["token"]
            return Reply(200, {"name": "x", "session_id": "s1", "fencing_token": t, "ttl_ms": ttl_ms})
        if r.path.endswith("/release"):
            return Reply(200, {"name": "x", "released": True})
        return Reply(404, err("not_found"))
    return h


class Stub:
    def __init__(self, ssl_context: Any = None) -> None:
        self.requests: List[Req] = []
        self.handler: Callable[[Req], Any] = healthy()
        self._mu = threading.Lock()
        self._closed = threading.Event()
        stub = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                # headers and body go out in two writes: without this, Nagle and delayed
                # ACKs add ~40 ms to every answer
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _serve(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                body = json.loads(raw) if raw else None
                r = Req(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic())
                with stub._mu:
                    stub.requests.append(r)
                    h = stub.handler
                rep = h(r)
                if isinstance(rep, Stream):
                    self._stream(rep)
                    return
                if rep.delay:
                    time.sleep(rep.delay)
                data = json.dumps(rep.body).encode()
                try:
                    self.send_response(rep.status)
                    for k, v in rep.headers.items():
                        self.send_header(k, v)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up

            def _stream(self, rep: "Stream") -> None:
                try:
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("transfer-encoding", "chunked")
                    self.end_headers()
                    for c in rep.chunks:
                        b = c.encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                        self.wfile.flush()
                    if rep.hold:
                        while not stub._closed.wait(0.05):
                            self.request.settimeout(0.01)
                            try:
                                if self.request.recv(1) == b"":
                                    break  # the client went away
                            except (socket.timeout, BlockingIOError):
                                pass
                    else:
                        self.wfile.write(b"0\r\n\r\n")
                        self.close_connection = True
                except OSError:
                    pass

            do_GET = do_POST = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        if ssl_context is not None:
            self.server.socket = ssl_context.wrap_socket(self.server.socket, server_side=True)
        scheme = "https" if ssl_context is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def matching(self, method: Optional[str] = None, suffix: str = "") -> List[Req]:
        with self._mu:
            return [r for r in self.requests if (method is None or r.method == method) and r.path.split("?")[0].endswith(suffix)]

    def close(self) -> None:
        self._closed.set()
        self.server.shutdown()
        self.server.server_close()
