"""Unit tests of a grant answered while the session could not be proven alive (docs/client.md
"An acquire that fails never leaves a grant behind"): the acquire's answer comes after the
session's only proof ran out, so the grant is not claimed (``lost`` is set) and it is given
back -- a lock by its fencing token, an election by resigning, a semaphore by name -- rather
than kept, unused, until the session ends. Stub servers (tests/stub.py).

The condition: a session of ttl 0.6 s (proof 0.54 s), keepalives the stub refuses, and an
acquire the stub answers after 0.8 s. The session's lost timer is held back, as in a process
that was paused while the acquire was in flight: the answer is judged before the timer
declares the session lost."""

import threading
import unittest
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import unquote

from raftlock import Client, LockLostError
from raftlock.session import Session

from .stub import Reply, Stub, err

UNPROVEN = "granted while the session could not be proven alive"
TTL_MS = 600
LATE = 0.8  # > ttl - margin (0.54 s)


class UnprovenStub:
    """Keepalives are refused (500); acquires, campaigns and acquire-alls of the names in
    ``late`` are answered after LATE seconds, every other one at once; ``release_reply``
    answers releases, resigns and release-alls (200 when None)."""

    def __init__(self) -> None:
        self.late: set = set()
        self.token = 10
        self.release_reply: Optional[Reply] = None
        self.mu = threading.Lock()

    def _next(self) -> int:
        with self.mu:
            self.token += 1
            return self.token

    def __call__(self, r: Any) -> Reply:
        path = r.path.split("?")[0]
        parts = [unquote(p) for p in path.split("/")]  # "", "v1", kind, name, action
        if r.method == "POST" and path == "/v1/sessions":
            return Reply(201, {"session_id": "s1", "ttl_ms": TTL_MS})
        if path.endswith("/keepalive"):
            return Reply(500, err("internal"))
        if r.method == "DELETE":
            return Reply(200, {"released": []})
        if path == "/v1/locks/acquire-all":
            grants = [{"name": n, "fencing_token": self._next()} for n in r.body["names"]]
            return Reply(200, {"session_id": "s1", "ttl_ms": TTL_MS, "grants": grants}, delay=LATE if self.late & set(r.body["names"]) else 0)
        if parts[-1] in ("release", "resign", "release-all"):
            return self.release_reply or Reply(200, {"released": True})
        if parts[-1] in ("acquire", "campaign"):
            name = parts[3]
            extra = {"permits": r.body["permits"], "limit": r.body["limit"]} if parts[2] == "semaphores" else \
                {"value": r.body["value"]} if parts[2] == "elections" else {}
            return Reply(200, dict(extra, name=name, session_id="s1", fencing_token=self._next(), ttl_ms=TTL_MS),
                         delay=LATE if name in self.late else 0)
        return Reply(404, err("not_found"))


class UnprovenGrantTest(unittest.TestCase):
    def setUp(self) -> None:
        self.stub = Stub()
        self.addCleanup(self.stub.close)
        self.g = UnprovenStub()
        self.stub.handler = self.g
        self.warnings: List[Tuple[str, Any]] = []
        self.client = Client([self.stub.url], on_warning=lambda m, e: self.warnings.append((m, e)))

    def session(self) -> Session:
        s = self.client.session(ttl=TTL_MS / 1000)
        self.addCleanup(s.close)
        # the lost timer runs late (a paused process): the late answer is judged while the
        # session is still open
        with s._mu:
            assert s._lost_timer is not None
            s._lost_timer.cancel()
            s._arm_lost_timer = lambda: None  # type: ignore[method-assign]
        return s

    def bodies(self, path: str) -> List[Dict[str, Any]]:
        return [r.body for r in self.stub.matching("POST", path)]

    def unproven_warnings(self) -> List[Tuple[str, Any]]:
        return [w for w in self.warnings if UNPROVEN in w[0]]

    def assert_not_claimed(self, s: Session, lk: Any) -> None:
        self.assertTrue(lk.lost.is_set())
        self.assertFalse(lk.held)
        self.assertIn("could not be proven alive", str(lk.reason))
        with self.assertRaises(LockLostError):
            lk.assert_held()
        self.assertNotIn(lk, s._locks)
        self.assertTrue(s.is_open)

    def test_a_lock_granted_while_the_session_could_not_be_proven_alive_is_released_by_its_token(self) -> None:
        s = self.session()
        self.g.late.add("billing")
        lk = s.lock("billing", wait=5)
        self.assertEqual(self.bodies("/v1/locks/billing/release"), [{"session_id": "s1", "fencing_token": lk.fencing_token}])
        self.assert_not_claimed(s, lk)
        self.assertEqual(self.unproven_warnings(), [])
        self.assertFalse(s._releasing, "the release is no longer in flight")
        # releasing the lost lock sends nothing more
        lk.release()
        self.assertEqual(len(self.bodies("/v1/locks/billing/release")), 1)

    def test_a_lock_set_granted_unproven_releases_each_lock_by_its_token(self) -> None:
        s = self.session()
        self.g.late.add("a")
        ls = s.lock_all(["a", "b"], wait=5)
        self.assertEqual(self.bodies("/v1/locks/a/release"), [{"session_id": "s1", "fencing_token": ls.fencing_tokens["a"]}])
        self.assertEqual(self.bodies("/v1/locks/b/release"), [{"session_id": "s1", "fencing_token": ls.fencing_tokens["b"]}])
        self.assertTrue(ls.lost.is_set())
        self.assertFalse(ls.held)
        for lk in ls.locks:
            self.assert_not_claimed(s, lk)
        self.assertEqual(self.bodies("/v1/locks/release-all"), [], "by token only: no other grant or wait is touched")
        self.assertEqual(self.unproven_warnings(), [])

    def test_a_semaphore_granted_unproven_is_released_by_name_and_ends_the_sessions_other_grants_of_it(self) -> None:
        s = self.session()
        first = s.semaphore("pool", limit=3)  # answered at once
        other = s.semaphore("other", limit=3)
        self.assertIn(first, s._locks)
        self.g.late.add("pool")
        sg = s.semaphore("pool", limit=3, wait=5)
        self.assertEqual(self.bodies("/v1/semaphores/pool/release"), [{"session_id": "s1"}])
        self.assert_not_claimed(s, sg)
        # the release by name ends the first grant too: lost, and no longer the session's
        self.assertTrue(first.lost.is_set())
        self.assertNotIn(first, s._locks)
        self.assertIn(other, s._locks)
        self.assertFalse(other.lost.is_set())
        self.assertEqual(self.bodies("/v1/semaphores/other/release"), [])
        self.assertEqual(self.unproven_warnings(), [])

    def test_a_leadership_granted_unproven_resigns(self) -> None:
        s = self.session()
        self.g.late.add("sched")
        ld = s.campaign("sched", "host-a", wait=5)
        self.assertEqual(self.bodies("/v1/elections/sched/resign"), [{"session_id": "s1"}])
        self.assert_not_claimed(s, ld)
        self.assertEqual(self.unproven_warnings(), [])

    def test_not_holder_is_fine_and_any_other_failure_is_reported(self) -> None:
        s = self.session()
        self.g.late.update({"gone", "billing"})
        self.g.release_reply = Reply(409, err("not_holder"))
        lk = s.lock("gone", wait=5)
        self.assertEqual(self.bodies("/v1/locks/gone/release"), [{"session_id": "s1", "fencing_token": lk.fencing_token}])
        self.assert_not_claimed(s, lk)
        self.assertEqual(self.unproven_warnings(), [], "nothing was held: nothing to report")

        self.g.release_reply = Reply(500, err("internal"))
        lk = s.lock("billing", wait=5)
        self.assertEqual(self.bodies("/v1/locks/billing/release"), [{"session_id": "s1", "fencing_token": lk.fencing_token}])
        self.assert_not_claimed(s, lk)
        self.assertEqual([m for m, _ in self.unproven_warnings()],
                         [f"could not release lock billing (token {lk.fencing_token}), {UNPROVEN}; it is freed when session s1 ends"])
        self.assertIsNotNone(self.unproven_warnings()[0][1])
        self.assertFalse(s._releasing)


if __name__ == "__main__":
    unittest.main()
