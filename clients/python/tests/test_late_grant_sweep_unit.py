"""Unit tests of the late-grant sweep (the cleanup after an acquire that gave up, README "No
grant is left behind"): a grant that a late copy of a given-up acquire makes is released
after the keepalive that lists it. Stub servers (tests/stub.py); keepalives are sent by
hand (the sessions' ttl of 30 s puts the automatic ones 10 s away)."""

import threading
import time
import unittest
from typing import Any, Dict, List, Optional, Set, Tuple
from urllib.parse import unquote

from raftlock import Client, OutcomeUnknownError
from raftlock.session import MAX_WATCHED, WATCH_SECONDS, Session, WatchedNames

from .stub import Reply, Stub, err
from .test_unit import wait_for

LATE = "by a late copy of an acquire that had given up"


class LateStub:
    """Acquires of the names in ``give_up`` answer 504 (the client gives up: outcome
    unknown), every other acquire is granted; the keepalive answer lists ``listed``, to which
    ``late_grant`` adds what a late copy of an acquire would have made. A release frees what
    it names from the list. ``release_gate`` holds releases with a token back until set,
    ``cleanup_gate`` those without; ``release_error`` answers releases with a token instead;
    ``acquire_gate`` holds granted acquires back."""

    def __init__(self) -> None:
        self.listed: List[Dict[str, Any]] = []
        self.give_up: Set[str] = set()
        self.token = 10
        self.release_gate: Optional[threading.Event] = None
        self.cleanup_gate: Optional[threading.Event] = None
        self.release_error: Optional[Reply] = None
        self.acquire_gate: Optional[threading.Event] = None
        self.mu = threading.Lock()

    def late_grant(self, kind: str, name: str, token: int) -> None:
        with self.mu:
            self.listed.append({"kind": kind, "name": name, "fencing_token": token, "waiters": 0})

    def drop(self, name: str, token: Optional[int] = None) -> None:
        with self.mu:
            self.listed = [g for g in self.listed if g["name"] != name or (token is not None and g["fencing_token"] != token)]

    def _grant(self, kind: str, name: str) -> int:
        with self.mu:
            self.token += 1
            self.listed.append({"kind": kind, "name": name, "fencing_token": self.token, "waiters": 0})
            return self.token

    def __call__(self, r: Any) -> Reply:
        path = r.path.split("?")[0]
        parts = [unquote(p) for p in path.split("/")]  # "", "v1", kind, name, action
        if r.method == "POST" and path == "/v1/sessions":
            return Reply(201, {"session_id": "s1", "ttl_ms": 30000})
        if path.endswith("/keepalive"):
            with self.mu:
                return Reply(200, {"session_id": "s1", "ttl_ms": 30000, "grants": list(self.listed)})
        if r.method == "DELETE":
            return Reply(200, {"released": []})
        if path == "/v1/locks/acquire-all":
            if self.give_up & set(r.body["names"]):
                return Reply(504, err("timeout"))
            grants = [{"name": n, "fencing_token": self._grant("lock", n)} for n in r.body["names"]]
            return Reply(200, {"session_id": "s1", "ttl_ms": 30000, "grants": grants})
        if path == "/v1/locks/release-all":
            for n in r.body["names"]:
                self.drop(n)
            return Reply(200, {"released": r.body["names"]})
        if parts[-1] in ("acquire", "campaign"):
            name = parts[3]
            if name in self.give_up:
                return Reply(504, err("timeout"))
            if self.acquire_gate is not None:
                self.acquire_gate.wait(5)
            kind = {"locks": "lock", "semaphores": "semaphore", "elections": "election"}[parts[2]]
            extra = {"permits": r.body["permits"], "limit": r.body["limit"]} if kind == "semaphore" else {"value": r.body["value"]} if kind == "election" else {}
            return Reply(200, dict(extra, name=name, session_id="s1", fencing_token=self._grant(kind, name), ttl_ms=30000))
        if parts[-1] == "release":
            token = r.body.get("fencing_token")
            if token is not None:
                if self.release_gate is not None:
                    self.release_gate.wait(5)
                if self.release_error is not None:
                    return self.release_error
            elif self.cleanup_gate is not None:
                self.cleanup_gate.wait(5)
            self.drop(parts[3], token)
            return Reply(200, {"name": parts[3], "released": True})
        return Reply(404, err("not_found"))


class SweepTest(unittest.TestCase):
    def setUp(self) -> None:
        self.stub = Stub()
        self.addCleanup(self.stub.close)
        self.g = LateStub()
        self.stub.handler = self.g
        self.warnings: List[Tuple[str, Any]] = []
        # a short budget: an acquire answered 504 gives up (OutcomeUnknownError) in 0.3 s
        self.client = Client([self.stub.url], retry_budget=0.3, on_warning=lambda m, e: self.warnings.append((m, e)))

    def session(self) -> Session:
        s = self.client.session(ttl=30)
        self.addCleanup(s.close)
        return s

    def give_up(self, s: Session, name: str, how: str = "lock") -> None:
        """An acquire of ``name`` that ends without a definite answer: the session cleans up."""
        self.g.give_up.add(name)
        with self.assertRaises(OutcomeUnknownError):
            if how == "lock":
                s.lock(name)
            elif how == "semaphore":
                s.semaphore(name, limit=3)
            else:
                s.campaign(name, "host-a")
        self.g.give_up.discard(name)

    def keepalive(self, s: Session) -> None:
        """One keepalive, and the sweep releases it started have ended."""
        s.keepalive()
        wait_for(lambda: not s._releasing, 3, "the sweep's releases")

    def releases(self, path: str) -> List[Dict[str, Any]]:
        return [r.body for r in self.stub.matching("POST", path)]

    def late_warnings(self) -> List[Tuple[str, Any]]:
        return [w for w in self.warnings if LATE in w[0]]

    def test_a_late_grant_of_a_name_given_up_on_is_released_by_its_token(self) -> None:
        s = self.session()
        self.give_up(s, "billing")
        self.assertEqual(self.releases("/v1/locks/billing/release"), [{"session_id": "s1"}], "the cleanup, without a token")
        self.g.late_grant("lock", "billing", 42)  # the cluster applied a copy after the cleanup
        self.keepalive(s)
        self.assertEqual(self.releases("/v1/locks/billing/release"), [{"session_id": "s1"}, {"session_id": "s1", "fencing_token": 42}])
        self.assertEqual(self.late_warnings(), [(f"released lock billing (token 42) granted to session s1 {LATE}", None)])
        # the next keepalive no longer lists it: nothing more is sent
        self.keepalive(s)
        self.assertEqual(len(self.releases("/v1/locks/billing/release")), 2)
        self.assertTrue(s.is_open)

    def test_a_grant_held_by_a_lock_object_or_an_acquire_in_flight_is_left_alone(self) -> None:
        s = self.session()
        self.give_up(s, "billing")
        lk = s.lock("billing")  # the keepalive lists its grant: the session's own
        self.keepalive(s)
        self.assertTrue(lk.held)
        self.assertEqual(self.releases("/v1/locks/billing/release"), [{"session_id": "s1"}], "only the cleanup")

        self.give_up(s, "report")
        self.g.acquire_gate = threading.Event()
        got: List[Any] = []
        t = threading.Thread(target=lambda: got.append(s.lock("report")))
        t.start()
        wait_for(lambda: s._acquiring.get(("lock", "report")), 3, "the acquire in flight")
        self.g.late_grant("lock", "report", 77)  # may be the very grant the acquire in flight is answered
        self.keepalive(s)
        self.g.drop("report", 77)
        self.g.acquire_gate.set()
        t.join(5)
        self.assertEqual(len(got), 1)
        self.assertEqual(self.releases("/v1/locks/report/release"), [{"session_id": "s1"}], "only the cleanup")
        self.assertEqual(self.late_warnings(), [])

    def test_a_grant_its_lock_is_giving_back_is_left_to_that_release(self) -> None:
        s = self.session()
        self.give_up(s, "billing")
        lk = s.lock("billing")
        self.g.release_gate = threading.Event()  # the lock's release waits at the server
        t = threading.Thread(target=lk.release)
        t.start()
        wait_for(lambda: len(self.releases("/v1/locks/billing/release")) == 2, 3, "the lock's release at the server")
        s.keepalive()  # still lists the grant: its release has not been applied
        self.g.release_gate.set()
        t.join(5)
        self.keepalive(s)  # and every release a sweep started has ended
        self.assertEqual(self.releases("/v1/locks/billing/release"), [{"session_id": "s1"}, {"session_id": "s1", "fencing_token": lk.fencing_token}],
                         "the cleanup and the lock's own release only")
        self.assertEqual(self.late_warnings(), [])

    def test_a_grant_of_a_name_never_given_up_on_is_left_alone(self) -> None:
        s = self.session()
        self.give_up(s, "pool")  # the lock "pool" is watched, not the semaphore
        s.lock("mine")
        # grants of the session taken with the one-shot calls and its session id
        self.g.late_grant("lock", "raw", 50)
        self.g.late_grant("semaphore", "pool", 51)
        self.keepalive(s)
        self.assertEqual(self.releases("/v1/locks/raw/release"), [])
        self.assertEqual(self.releases("/v1/semaphores/pool/release"), [])
        self.assertEqual(self.releases("/v1/locks/mine/release"), [])
        self.assertEqual(self.late_warnings(), [])

    def test_a_late_semaphore_grant_is_released_by_name(self) -> None:
        s = self.session()
        self.give_up(s, "pool", "semaphore")
        self.assertEqual(self.releases("/v1/semaphores/pool/release"), [{"session_id": "s1"}])
        self.g.late_grant("semaphore", "pool", 60)
        self.keepalive(s)
        self.assertEqual(self.releases("/v1/semaphores/pool/release"), [{"session_id": "s1"}] * 2)
        self.assertEqual(self.releases("/v1/locks/pool/release"), [])
        self.assertEqual(self.late_warnings(), [(f"released semaphore pool granted to session s1 {LATE}", None)])
        # a SemaphoreGrant of the name holds any grant of it
        sg = s.semaphore("pool", limit=3)
        self.g.late_grant("semaphore", "pool", sg.fencing_token + 5)
        self.keepalive(s)
        self.assertTrue(sg.held)
        self.assertEqual(len(self.releases("/v1/semaphores/pool/release")), 2)

    def test_campaigns_and_lock_sets_that_give_up_are_watched_too(self) -> None:
        s = self.session()
        self.give_up(s, "sched", "campaign")
        self.g.give_up.add("a")
        with self.assertRaises(OutcomeUnknownError):
            s.lock_all(["a", "b"])
        self.assertEqual(self.releases("/v1/locks/release-all"), [{"names": ["a", "b"], "session_id": "s1"}])
        self.g.late_grant("election", "sched", 70)
        self.g.late_grant("lock", "b", 71)
        self.keepalive(s)
        self.assertEqual(self.releases("/v1/locks/sched/release")[1:], [{"session_id": "s1", "fencing_token": 70}])
        self.assertEqual(self.releases("/v1/locks/b/release"), [{"session_id": "s1", "fencing_token": 71}])
        self.assertEqual(self.releases("/v1/locks/a/release"), [])

    def test_an_acquire_of_the_name_waits_for_a_sweep_release_in_flight(self) -> None:
        s = self.session()
        self.give_up(s, "billing")
        n = len(self.stub.matching("POST", "/v1/locks/billing/acquire"))
        self.g.late_grant("lock", "billing", 42)
        self.g.release_gate = threading.Event()
        s.keepalive()
        wait_for(lambda: len(self.releases("/v1/locks/billing/release")) == 2, 3, "the sweep release")
        got: List[Any] = []
        t = threading.Thread(target=lambda: got.append(s.lock("billing")))
        t.start()
        t.join(0.3)  # the acquire is held back while the release is answered
        self.assertEqual(len(self.stub.matching("POST", "/v1/locks/billing/acquire")), n, "an acquire went out during the sweep release")
        self.g.release_gate.set()
        t.join(5)
        self.assertEqual(len(got), 1)
        acq = self.stub.matching("POST", "/v1/locks/billing/acquire")
        self.assertEqual(len(acq), n + 1)
        self.assertTrue(got[0].held)

    def test_an_acquire_of_the_name_waits_for_a_cleanup_in_flight(self) -> None:
        # a cleanup release without a token sent after another acquire's grant would free it
        s = self.session()
        self.g.cleanup_gate = threading.Event()
        first = threading.Thread(target=lambda: self.give_up(s, "billing"))
        first.start()
        wait_for(lambda: self.releases("/v1/locks/billing/release"), 3, "the cleanup release")
        self.g.give_up.discard("billing")  # the next acquire is granted
        n = len(self.stub.matching("POST", "/v1/locks/billing/acquire"))
        got: List[Any] = []
        t = threading.Thread(target=lambda: got.append(s.lock("billing")))
        t.start()
        t.join(0.3)
        self.assertEqual(len(self.stub.matching("POST", "/v1/locks/billing/acquire")), n, "an acquire went out during the cleanup")
        self.g.cleanup_gate.set()
        first.join(5)
        t.join(5)
        self.assertEqual(len(got), 1)
        self.assertTrue(got[0].held)
        self.assertEqual(len(self.stub.matching("POST", "/v1/locks/billing/acquire")), n + 1)

    def test_a_sweep_release_that_fails_is_tried_again_after_the_next_keepalive(self) -> None:
        s = self.session()
        self.give_up(s, "billing")
        self.g.late_grant("lock", "billing", 42)
        self.g.release_error = Reply(500, err("internal"))
        self.keepalive(s)
        self.assertEqual(len(self.late_warnings()), 1)
        self.assertIn("could not release lock billing (token 42)", self.late_warnings()[0][0])
        self.assertIsNotNone(self.late_warnings()[0][1])
        self.g.release_error = None
        self.keepalive(s)
        self.assertEqual(self.releases("/v1/locks/billing/release")[1:], [{"session_id": "s1", "fencing_token": 42}] * 2)
        self.assertEqual(self.late_warnings()[1], (f"released lock billing (token 42) granted to session s1 {LATE}", None))

    def test_a_name_is_watched_for_ten_minutes(self) -> None:
        self.assertEqual((WATCH_SECONDS, MAX_WATCHED), (600.0, 1024))
        w = WatchedNames()
        w.add(("lock", "a"), 1000.0)
        w.expire(1599.9)
        self.assertIn(("lock", "a"), w)
        self.assertNotIn(("semaphore", "a"), w)
        w.expire(1600.0)
        self.assertNotIn(("lock", "a"), w)
        # watching again extends the deadline
        w.add(("lock", "a"), 1000.0)
        w.add(("lock", "a"), 1300.0)
        w.expire(1899.9)
        self.assertIn(("lock", "a"), w)
        w.expire(1900.0)
        self.assertEqual(len(w), 0)
        # full: the name with the earliest deadline goes
        for i in range(MAX_WATCHED):
            w.add(("lock", str(i)), 2000.0 + i)
        w.add(("lock", "0"), 5000.0)  # watched already: nothing is dropped
        self.assertEqual(len(w), MAX_WATCHED)
        w.add(("lock", "new"), 6000.0)
        self.assertEqual(len(w), MAX_WATCHED)
        self.assertNotIn(("lock", "1"), w)
        self.assertIn(("lock", "0"), w)
        self.assertIn(("lock", "new"), w)

        # the session drops an expired name and leaves its grant alone
        s = self.session()
        self.give_up(s, "billing")
        with s._mu:
            s._watched.add(("lock", "billing"), time.monotonic() - WATCH_SECONDS)  # given up on 10 minutes ago
        self.g.late_grant("lock", "billing", 42)
        self.keepalive(s)
        self.assertEqual(self.releases("/v1/locks/billing/release"), [{"session_id": "s1"}], "only the cleanup")
        self.assertEqual(len(s._watched), 0)


if __name__ == "__main__":
    unittest.main()
