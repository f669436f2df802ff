"""Unit tests of lock sets, deadlocks and contention in the Python client (docs/contract.md
§5) against stub servers (tests/stub.py)."""

import threading
import unittest
from typing import Any, Dict, List

from raftlock import Client, DeadlockError, InvalidRequestError, LockHeldError

from .stub import Reply, Stub, err
from .test_unit import wait_for


class SetStub:
    """Grants every acquire-all; the keepalive lists the grants with ``waiters``."""

    def __init__(self, ttl_ms: int = 600) -> None:
        self.ttl_ms = ttl_ms
        self.grants: List[Dict[str, Any]] = []
        self.token = 0
        self.waiters = 0
        self.refuse: Any = None
        self.mu = threading.Lock()

    def __call__(self, r: Any) -> Reply:
        with self.mu:
            if r.method == "POST" and r.path == "/v1/sessions":
                return Reply(201, {"session_id": "s1", "ttl_ms": self.ttl_ms})
            if r.path.endswith("/keepalive"):
                return Reply(200, {"session_id": "s1", "ttl_ms": self.ttl_ms, "grants": [dict(kind="lock", waiters=self.waiters, **g) for g in self.grants]})
            if r.path == "/v1/locks/acquire-all":
                if self.refuse is not None:
                    return Reply(409, self.refuse)
                self.grants = []
                for n in r.body["names"]:
                    self.token += 1
                    self.grants.append({"name": n, "fencing_token": self.token})
                return Reply(200, {"session_id": "s1", "ttl_ms": self.ttl_ms, "grants": self.grants})
            if r.path == "/v1/locks/release-all":
                self.grants = []
                return Reply(200, {"released": r.body["names"]})
            if r.path.endswith("/acquire"):
                self.token += 1
                name = r.path[len("/v1/locks/"):-len("/acquire")]
                self.grants.append({"name": name, "fencing_token": self.token})
                return Reply(200, {"name": name, "session_id": "s1", "fencing_token": self.token, "ttl_ms": self.ttl_ms})
            if r.method == "DELETE":
                return Reply(200, {"released": []})
            return Reply(404, err("not_found"))


class LockSetTest(unittest.TestCase):
    def setUp(self) -> None:
        self.stub = Stub()
        self.addCleanup(self.stub.close)

    def test_lock_all_grants_every_name_and_releases_them_in_one_request(self) -> None:
        g = SetStub()
        self.stub.handler = g
        s = Client([self.stub.url]).session(ttl=0.6)
        self.addCleanup(s.close)
        ls = s.lock_all(["accounts/2", "accounts/1"], shared=True, max_hold=60)
        body = self.stub.matching("POST", "/acquire-all")[0].body
        self.assertEqual(body, {"names": ["accounts/2", "accounts/1"], "session_id": "s1", "mode": "shared", "max_hold_ms": 60000, "wait_ms": 0})
        self.assertEqual(ls.fencing_tokens, {"accounts/2": 1, "accounts/1": 2})
        self.assertEqual([lk.name for lk in ls.locks], ["accounts/2", "accounts/1"])
        self.assertTrue(ls.held)
        seen: List[Any] = []
        ls.on_contended(lambda lk, n: seen.append((lk.name, n)))
        with g.mu:
            g.waiters = 3
        wait_for(lambda: len(seen) == 2, 3, "the contended callbacks")
        self.assertEqual(sorted(seen), [("accounts/1", 3), ("accounts/2", 3)])
        self.assertTrue(ls.contended and ls.lock("accounts/1").waiters == 3)
        ls.release()
        self.assertTrue(ls.lost.is_set())
        self.assertEqual(len(self.stub.matching("POST", "/release-all")), 1)
        self.assertEqual(self.stub.matching("POST", "/release-all")[0].body, {"names": ["accounts/2", "accounts/1"], "session_id": "s1"})

    def test_a_lost_lock_sets_the_sets_lost(self) -> None:
        g = SetStub()
        self.stub.handler = g
        s = Client([self.stub.url]).session(ttl=0.6)
        self.addCleanup(s.close)
        ls = s.lock_all(["a", "b"])
        with g.mu:
            g.grants = [x for x in g.grants if x["name"] != "b"]  # b revoked
        self.assertTrue(ls.lost.wait(3))
        self.assertFalse(ls.held)
        self.assertIn("revoked", ls.reason.message)

    def test_deadlock_and_blocked_errors_are_typed_and_send_nothing_more(self) -> None:
        g = SetStub()
        g.refuse = err("deadlock", cycle=[{"session_id": "s1", "name": "a"}, {"session_id": "s2", "name": "p", "kind": "semaphore"}])
        self.stub.handler = g
        c = Client([self.stub.url])
        s = c.session(ttl=0.6)
        self.addCleanup(s.close)
        with self.assertRaises(DeadlockError) as cm:
            s.lock_all(["a", "b"], wait=5)
        self.assertEqual(cm.exception.cycle, [{"session_id": "s1", "name": "a"}, {"session_id": "s2", "name": "p", "kind": "semaphore"}])
        g.refuse = err("lock_held", blocked=[{"name": "b", "holder": {"session_id": "s9", "owner": "", "fencing_token": 4}}, {"name": "c"}])
        with self.assertRaises(LockHeldError) as held:
            s.lock_all(["a", "b", "c"])
        self.assertEqual([b["name"] for b in held.exception.blocked], ["b", "c"])
        self.assertEqual(held.exception.blocked[0]["holder"].fencing_token, 4)
        self.assertEqual(self.stub.matching("POST", "/release-all"), [], "a definite refusal sends no release")
        with self.assertRaises(InvalidRequestError):
            s.lock_all(["a", "a"])

    def test_client_locks_context_manager_and_a_single_locks_contention(self) -> None:
        g = SetStub(2000)
        self.stub.handler = g
        c = Client([self.stub.url])
        with c.locks(["x", "y"], ttl=2) as ls:
            self.assertEqual(set(ls.fencing_tokens), {"x", "y"})
        self.assertTrue(ls.lost.is_set())
        self.assertEqual(len(self.stub.matching("DELETE")), 1, "the session was closed")
        s = c.session(ttl=0.6)
        self.addCleanup(s.close)
        lk = s.lock("hot")
        got = threading.Event()
        lk.on_contended(lambda _lk, n: got.set())
        with g.mu:
            g.waiters = 1
        self.assertTrue(got.wait(3))
        self.assertTrue(lk.contended)


if __name__ == "__main__":
    unittest.main()
