"""Unit tests of the Python client's §4 calls (docs/contract.md: shared locks, semaphores,
elections, watch, revocation and max hold) against stub servers (tests/stub.py)."""

import json
import threading
import time
import unittest
from typing import Any, Dict, List

from raftlock import (Client, CompactedError, InvalidRequestError, LockHeldError, LockLostError, SemaphoreFullError)

from .stub import Reply, Stream, Stub, err
from .test_unit import wait_for


def ev(event: str, index: int, **data: Any) -> str:
    return f"id: {index}\nevent: {event}\ndata: {json.dumps(dict(data, index=index))}\n\n"


class GrantsStub:
    """A healthy cluster whose keepalive answer lists the grants in ``held``."""

    def __init__(self, ttl_ms: int = 600) -> None:
        self.ttl_ms = ttl_ms
        self.held: List[Dict[str, Any]] = []
        self.token = 10
        self.mu = threading.Lock()

    def remove(self, name: str) -> None:
        with self.mu:
            self.held = [g for g in self.held if g["name"] != name]

    def __call__(self, r: Any) -> Reply:
        with self.mu:
            path = r.path.split("?")[0]

            def grant(kind: str, prefix: str, suffix: str, **extra: Any) -> Reply:
                self.token += 1
                name = path[len(prefix):-len(suffix)]
                self.held.append({"kind": kind, "name": name, "fencing_token": self.token})
                return Reply(200, dict(extra, name=name, session_id="s1", fencing_token=self.token, ttl_ms=self.ttl_ms))
            if r.method == "POST" and path == "/v1/sessions":
                return Reply(201, {"session_id": "s1", "ttl_ms": self.ttl_ms})
            if path.endswith("/keepalive"):
                return Reply(200, {"session_id": "s1", "ttl_ms": self.ttl_ms, "grants": list(self.held)})
            if r.method == "DELETE":
                return Reply(200, {"released": []})
            if path.startswith("/v1/locks/") and path.endswith("/acquire"):
                return grant("lock", "/v1/locks/", "/acquire")
            if path.startswith("/v1/semaphores/") and path.endswith("/acquire"):
                return grant("semaphore", "/v1/semaphores/", "/acquire", permits=r.body["permits"], limit=r.body["limit"])
            if path.endswith("/campaign"):
                return grant("election", "/v1/elections/", "/campaign", value=r.body["value"])
            if path.endswith("/proclaim"):
                return Reply(200, {"name": "e", "value": r.body["value"]})
            if path.endswith("/resign"):
                return Reply(200, {"name": "e", "resigned": True})
            if path.endswith("/release"):
                return Reply(200, {"name": "x", "released": True})
            if path.endswith("/revoke"):
                return Reply(200, {"name": "x", "revoked": [{"session_id": "s1", "fencing_token": 11}]})
            return Reply(404, err("not_found"))


class StubCase(unittest.TestCase):
    def setUp(self) -> None:
        self.stub = Stub()
        self.addCleanup(self.stub.close)


class GrantsTest(StubCase):
    def test_the_keepalive_answer_ends_revoked_grants_and_keeps_the_rest(self) -> None:
        g = GrantsStub()
        self.stub.handler = g
        s = Client([self.stub.url]).session(ttl=0.6)
        self.addCleanup(s.close)
        taken, kept = s.lock("taken"), s.lock("kept", shared=True)
        pool = s.semaphore("pool", limit=3, permits=2)
        leader = s.campaign("sched", "host-a")
        self.assertEqual((kept.mode, pool.permits, pool.limit, leader.value), ("shared", 2, 3, "host-a"))
        self.assertEqual(self.stub.matching("POST", "/kept/acquire")[0].body["mode"], "shared")
        self.assertEqual(self.stub.matching("POST", "/pool/acquire")[0].body, {"session_id": "s1", "limit": 3, "permits": 2, "wait_ms": 0})
        for name in ("taken", "pool", "sched"):
            g.remove(name)
        for lk in (taken, pool, leader):
            self.assertTrue(lk.lost.wait(3), f"{lk!r} not ended by the keepalive")
            self.assertIn("revoked", lk.reason.message)
        n = len(self.stub.matching("POST", "/keepalive"))
        wait_for(lambda: len(self.stub.matching("POST", "/keepalive")) > n, 3, "another keepalive")
        self.assertTrue(kept.held)
        self.assertEqual(self.stub.matching("GET"), [], "no read beside the keepalives")

    def test_max_hold_is_sent_and_lost_is_set_before_it(self) -> None:
        self.stub.handler = GrantsStub(2000)
        s = Client([self.stub.url]).session(ttl=2)
        self.addCleanup(s.close)
        start = time.monotonic()
        lk = s.lock("brief", max_hold=0.3)
        self.assertEqual(self.stub.matching("POST", "/brief/acquire")[0].body["max_hold_ms"], 300)
        self.assertTrue(lk.lost.wait(2))
        self.assertLess(time.monotonic() - start, 0.3)
        self.assertFalse(lk.held)
        with self.assertRaises(InvalidRequestError):
            s.lock("x", max_hold=0.05)

    def test_an_answered_max_hold_bounds_the_grant_though_none_was_asked(self) -> None:
        # a re-acquire can return a grant an earlier request of the session made (one given
        # up on, delivered late) with that request's max hold (jepsen-lite seed 380155236)
        stub = GrantsStub(2000)

        def handler(r: Any) -> Reply:
            rep = stub(r)
            if r.path.endswith("/given-up/acquire"):
                rep.body["max_hold_ms"] = 300
            return rep
        self.stub.handler = handler
        s = Client([self.stub.url]).session(ttl=2)
        self.addCleanup(s.close)
        start = time.monotonic()
        lk = s.lock("given-up")
        self.assertNotIn("max_hold_ms", self.stub.matching("POST", "/given-up/acquire")[0].body)
        self.assertTrue(lk.lost.wait(2))
        self.assertLess(time.monotonic() - start, 0.3)
        self.assertFalse(lk.held)

    def test_election_calls_and_the_leadership_lifecycle(self) -> None:
        self.stub.handler = GrantsStub(2000)
        c = Client([self.stub.url])
        with c.campaign("jobs/sched", "v1", ttl=2, max_hold=60) as leader:
            req = self.stub.matching("POST", "/campaign")[0]
            self.assertEqual(req.path, "/v1/elections/jobs%2Fsched/campaign")
            self.assertEqual((req.body["value"], req.body["max_hold_ms"]), ("v1", 60000))
            leader.proclaim("v2")
            self.assertEqual(leader.value, "v2")
        self.assertTrue(leader.lost.is_set())
        leader.resign()
        self.assertEqual(len(self.stub.matching("POST", "/resign")), 1)
        self.assertEqual(len(self.stub.matching("DELETE")), 1, "resign closed the session campaign opened")
        with self.assertRaises(LockLostError):
            leader.proclaim("v3")
        with self.assertRaises(InvalidRequestError):
            c.campaign("x", "v" * 4097)

        def busy(r: Any) -> Reply:
            if r.path.endswith("/campaign"):
                return Reply(409, err("lock_held", leader={"session_id": "s9", "value": "host-z", "fencing_token": 77}))
            if r.method == "GET":
                return Reply(200, {"name": "jobs/sched", "leader": {"session_id": "s9", "value": "host-z", "fencing_token": 77}})
            return GrantsStub(2000)(r)
        self.stub.handler = busy
        with self.assertRaises(LockHeldError) as cm:
            c.campaign("jobs/sched", "v1", ttl=2)
        self.assertEqual(cm.exception.leader["value"], "host-z")
        self.assertEqual(c.leader("jobs/sched")["fencing_token"], 77)

    def test_revoke_and_a_full_semaphore(self) -> None:
        self.stub.handler = GrantsStub(2000)
        c = Client([self.stub.url])
        self.assertEqual(c.revoke("db/pool", session_id="s1", semaphore=True), [{"session_id": "s1", "fencing_token": 11}])
        r = self.stub.matching("POST", "/revoke")[0]
        self.assertEqual((r.path, r.body), ("/v1/semaphores/db%2Fpool/revoke", {"session_id": "s1"}))
        self.assertTrue(r.key)
        s = c.session(ttl=2)
        self.addCleanup(s.close)
        self.stub.handler = lambda r: Reply(409, err("semaphore_full", in_use=3, limit=3)) if r.path.endswith("/acquire") else GrantsStub(2000)(r)
        with self.assertRaises(SemaphoreFullError) as cm:
            s.semaphore("db/pool", limit=3)
        self.assertEqual((cm.exception.in_use, cm.exception.limit), (3, 3))
        with self.assertRaises(InvalidRequestError):
            s.semaphore("db/pool", limit=3, permits=4)


class WatchTest(unittest.TestCase):
    def test_resumes_on_another_node_without_gap_or_duplicate(self) -> None:
        a, b = Stub(), Stub()
        self.addCleanup(a.close)
        self.addCleanup(b.close)

        def ha(r: Any) -> Any:
            if "from_index" in r.path:
                return Reply(503, err("unavailable"), {"Retry-After": "5"})
            return Stream([ev("state", 4, kind="lock", name="jobs/a", session_id="s1", fencing_token=3) + "id: 4\n\n",
                           ev("released", 5, kind="lock", name="jobs/a", session_id="s1", fencing_token=3)])
        a.handler = ha
        b.handler = lambda r: Stream([ev("released", 5, kind="lock", name="jobs/a", session_id="s1", fencing_token=3)
                                      + ev("acquired", 5, kind="lock", name="jobs/a", session_id="s2", fencing_token=6),
                                      ": keepalive\n\n" + ev("acquired", 6, kind="semaphore", name="jobs/p", session_id="s2", fencing_token=7, permits=2, limit=3)],
                                     hold=True)
        c = Client([a.url, b.url])
        c._transport.endpoints._next = 0
        it = c.watch("jobs/")
        got = [next(it) for _ in range(5)]
        it.close()
        self.assertEqual([(e["event"], e["index"], e.get("session_id")) for e in got],
                         [("state", 4, "s1"), ("synced", 4, None), ("released", 5, "s1"), ("acquired", 5, "s2"), ("acquired", 6, "s2")])
        self.assertEqual(got[4]["permits"], 2)
        self.assertIn("from_index=4", b.requests[0].path)
        self.assertIn("prefix=jobs%2F", b.requests[0].path)

    def test_compacted_on_every_endpoint_ends_the_iterator(self) -> None:
        a = Stub()
        self.addCleanup(a.close)
        a.handler = lambda r: Reply(410, err("compacted", compacted_index=90))
        with self.assertRaises(CompactedError) as cm:
            next(Client([a.url]).watch("", from_index=7))
        self.assertEqual(cm.exception.compacted_index, 90)
        self.assertIn("from_index=7", a.requests[0].path)

    def test_observe_steps_once_per_command(self) -> None:
        a = Stub()
        self.addCleanup(a.close)
        a.handler = lambda r: Stream([
            ev("state", 3, kind="election", name="sched", session_id="a", fencing_token=3, value="host-a") + "id: 3\n\n",
            ev("proclaimed", 4, kind="election", name="sched", session_id="a", value="host-a:2"),
            ev("acquired", 5, kind="lock", name="sched-other", session_id="x", fencing_token=5),
            ev("resigned", 6, kind="election", name="sched", session_id="a", fencing_token=3)
            + ev("acquired", 6, kind="election", name="sched", session_id="b", fencing_token=6, value="host-b"),
            ev("resigned", 7, kind="election", name="sched", session_id="b", fencing_token=6)], hold=True)
        it = Client([a.url]).observe("sched")
        got = [next(it) for _ in range(4)]
        it.close()
        self.assertEqual([None if l is None else (l["session_id"], l["fencing_token"], l["value"]) for l in got],
                         [("a", 3, "host-a"), ("a", 3, "host-a:2"), ("b", 6, "host-b"), None])


if __name__ == "__main__":
    unittest.main()
