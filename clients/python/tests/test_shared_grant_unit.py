"""Unit tests of acquires and releases of one name at once, in one session (docs/client.md
"Acquires and releases of one name at once"): a second acquire of a name the session holds
returns the same grant, so a release ends every grant object that carries it, and an
acquire answered while such a release was out asks again. The stub answers as the cluster
does for one session; gates hold an acquire's answer after it took effect, or a release
before it does. Stub servers (tests/stub.py)."""

import threading
import unittest
from typing import Any, Dict, List, Optional
from urllib.parse import unquote

from raftlock.session import Session

from .stub import Reply, err
from .test_unit import StubCase, wait_for


class SharedStub:
    """The session's grants by (space, name); an acquire returns the session's grant of the
    name or makes one; a lock release by token ends that grant, a semaphore release the
    session's grant of the name. ``answer_gate`` holds an acquire's answer after it took
    effect; ``release_gate`` holds a release before it takes effect."""

    def __init__(self) -> None:
        self.held: Dict[tuple, int] = {}
        self.token = 0
        self.acquires = 0
        self.releases = 0
        self.answer_gate: Optional[threading.Event] = None
        self.release_gate: Optional[threading.Event] = None
        self.mu = threading.Lock()

    def grant(self, space: str, name: str) -> int:
        with self.mu:
            return self.held.get((space, name), 0)

    def count(self, what: str) -> int:
        with self.mu:
            return getattr(self, what)

    def __call__(self, r: Any) -> Reply:
        path = r.path.split("?")[0]
        parts = [unquote(p) for p in path.split("/")]  # "", "v1", kind, name, action
        if r.method == "POST" and path == "/v1/sessions":
            return Reply(201, {"session_id": "s1", "ttl_ms": 30000})
        if path.endswith("/keepalive"):
            with self.mu:
                listed = [{"kind": k[0], "name": k[1], "fencing_token": t, "waiters": 0} for k, t in self.held.items()]
            return Reply(200, {"session_id": "s1", "ttl_ms": 30000, "grants": listed})
        if r.method == "DELETE":
            return Reply(200, {"released": []})
        space = {"locks": "lock", "semaphores": "semaphore"}.get(parts[2], "")
        if parts[-1] == "acquire" and space:
            with self.mu:
                key = (space, parts[3])
                if key not in self.held:
                    self.token += 1
                    self.held[key] = self.token
                tok = self.held[key]
                self.acquires += 1
                gate = self.answer_gate
            if gate is not None:
                gate.wait(5)
            extra = {"permits": r.body["permits"], "limit": r.body["limit"]} if space == "semaphore" else {}
            return Reply(200, dict(extra, name=parts[3], session_id="s1", fencing_token=tok, ttl_ms=30000))
        if parts[-1] == "release" and space:
            with self.mu:
                self.releases += 1
                gate = self.release_gate
            if gate is not None:
                gate.wait(5)
            with self.mu:
                key = (space, parts[3])
                token = r.body.get("fencing_token")
                if key not in self.held or (token is not None and self.held[key] != token):
                    return Reply(409, err("not_holder"))
                del self.held[key]
            return Reply(200, {"name": parts[3], "released": True})
        return Reply(404, err("not_found"))


class SharedGrantTest(StubCase):
    def setUp(self) -> None:
        super().setUp()
        self.g = SharedStub()
        self.stub.handler = self.g

    def session(self) -> Session:
        s = self.client().session(ttl=30)
        self.addCleanup(s.close)
        return s

    def background(self, fn) -> List[Any]:
        """runs fn on a thread; the list gets its result or error, once it is done"""
        out: List[Any] = []

        def run() -> None:
            try:
                out.append(fn())
            except BaseException as e:  # noqa: BLE001 -- reported by the test
                out.append(e)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.addCleanup(t.join, 5)
        return out

    def overtaken(self, take, give) -> Any:
        """take (an acquire) takes effect at the stub, its answer waits; give (a release of
        the same grant) is answered; then take's answer goes. Returns what take returned."""
        gate = threading.Event()
        self.addCleanup(gate.set)
        self.g.answer_gate = gate
        before = self.g.count("acquires")
        out = self.background(take)
        wait_for(lambda: self.g.count("acquires") > before, 3, "the acquire took effect")
        self.g.answer_gate = None
        give()
        gate.set()
        wait_for(lambda: out, 5, "the acquire's end")
        if isinstance(out[0], BaseException):
            raise out[0]
        return out[0]

    def test_a_release_ends_every_lock_object_that_carries_its_grant(self) -> None:
        s = self.session()
        first = s.lock("shared")
        second = s.lock("shared")
        self.assertEqual(first.fencing_token, second.fencing_token, "the session's grant, returned again")
        first.release()
        self.assertFalse(second.held, "the other object still claims the released grant")
        self.assertTrue(second.lost.is_set())

    def test_a_lock_answered_while_a_release_was_out_asks_again(self) -> None:
        s = self.session()
        first = s.lock("overtaken")
        second = self.overtaken(lambda: s.lock("overtaken"), first.release)
        self.assertTrue(second.held)
        self.assertNotEqual(second.fencing_token, first.fencing_token, "not the grant the release ended")
        self.assertEqual(self.g.grant("lock", "overtaken"), second.fencing_token, "the cluster agrees")

    def test_a_semaphore_answered_while_a_release_was_out_asks_again(self) -> None:
        s = self.session()
        first = s.semaphore("pool", limit=1)
        second = self.overtaken(lambda: s.semaphore("pool", limit=1), first.release)
        self.assertTrue(second.held)
        self.assertEqual(self.g.grant("semaphore", "pool"), second.fencing_token, "the cluster agrees")

    def test_an_acquire_waits_for_a_release_of_its_name_in_flight(self) -> None:
        s = self.session()
        first = s.lock("queue")
        gate = threading.Event()
        self.addCleanup(gate.set)
        self.g.release_gate = gate
        released = self.background(first.release)
        wait_for(lambda: self.g.count("releases") == 1, 3, "the release at the stub")
        # an acquire sent now would be answered the grant the release is about to end
        acquires = self.g.count("acquires")
        taken = self.background(lambda: s.lock("queue"))
        wait_for(lambda: self.g.count("acquires") > acquires or s._changed._waiters, 3, "the acquire waiting, or sent")  # type: ignore[attr-defined]
        self.g.release_gate = None
        gate.set()
        wait_for(lambda: released and taken, 5, "the release and the acquire")
        second = taken[0]
        self.assertNotIsInstance(second, BaseException)
        self.assertTrue(second.held)
        self.assertGreater(second.fencing_token, first.fencing_token, "a grant made after the release")
        self.assertEqual(self.g.grant("lock", "queue"), second.fencing_token)


if __name__ == "__main__":
    unittest.main()
