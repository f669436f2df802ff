"""Leader routing (README "Leader routing") against three stub nodes: calls go to the
leader the answers name when it is one of the endpoints, fall back to the rotation when it
rests, and keep every retry rule (one Idempotency-Key per change across the failover)."""

import threading
import unittest
from typing import List

from raftlock import Client
from raftlock.endpoints import EndpointSet

from .stub import Reply, Req, Stub, err, healthy


class EndpointSetLeaderTest(unittest.TestCase):
    def test_prefers_the_hint_while_ready_and_ignores_other_addresses(self) -> None:
        now = [0.0]
        es = EndpointSet(["http://a:1", "http://b:1", "http://c:1"], lambda: now[0])
        self.assertIsNone(es.leader_url)
        self.assertEqual(es.pick(True)[0], "http://a:1", "no hint yet: the rotation")
        es.note_leader("http://c:1/")
        self.assertEqual(es.leader_url, "http://c:1")
        self.assertEqual([es.pick(True)[0], es.pick(True)[0]], ["http://c:1", "http://c:1"])
        self.assertEqual(es.pick()[0], "http://b:1", "calls for any node keep rotating")
        for h in ("http://evil:1", "not a url", "", None, "ftp://x:1"):
            es.note_leader(h)
            self.assertEqual(es.leader_url, "http://c:1", f"hint {h!r} ignored")
        es.retry_after("http://c:1", 1.0)
        url, rest = es.pick(True)
        self.assertNotEqual(url, "http://c:1", "a resting leader is not waited for")
        self.assertEqual(rest, 0.0)
        now[0] += 1.0
        self.assertEqual(es.pick(True)[0], "http://c:1")


class RoutingTest(unittest.TestCase):
    def setUp(self) -> None:
        self.stubs = [Stub(), Stub(), Stub()]
        for s in self.stubs:
            self.addCleanup(s.close)
        self.leader = self.stubs[1].url
        self.order: List[int] = []
        self.mu = threading.Lock()
        for i, s in enumerate(self.stubs):
            s.handler = self._named(i, healthy(60_000))

    def _named(self, i: int, inner):
        def h(r: Req) -> Reply:
            with self.mu:
                self.order.append(i)
            rep = inner(r)
            rep.headers.setdefault("X-Raftlock-Leader", self.leader)
            return rep
        return h

    def urls(self) -> List[str]:
        return [s.url for s in self.stubs]

    def test_calls_go_to_the_leader_the_answers_name_and_stale_reads_anywhere(self) -> None:
        c = Client(self.urls())
        self.addCleanup(c.close)
        for _ in range(5):
            c.close_session("s1")
        self.assertEqual(self.order[1:], [1, 1, 1, 1], f"after the first answer every call goes to the leader: {self.order}")
        del self.order[:]
        for s in self.stubs:
            s.handler = self._named(self.stubs.index(s), lambda r: Reply(200, {"name": "x", "held": False, "waiters": 0}))
        for _ in range(3):
            c.get_lock("x", stale=True)
        self.assertEqual(len(set(self.order)), 3, f"stale reads rotate: {self.order}")

    def test_leader_routing_off_rotates(self) -> None:
        c = Client(self.urls(), leader_routing=False)
        self.addCleanup(c.close)
        for _ in range(6):
            c.close_session("s1")
        for a, b in zip(self.order, self.order[1:]):
            self.assertNotEqual(a, b, f"consecutive calls rotate: {self.order}")

    def test_a_hint_naming_another_address_is_never_contacted(self) -> None:
        outsider = Stub()
        self.addCleanup(outsider.close)
        self.leader = outsider.url
        c = Client(self.urls())
        self.addCleanup(c.close)
        for _ in range(3):
            c.close_session("s1")
        self.assertEqual(outsider.requests, [])

    def test_a_leader_failure_falls_back_with_the_same_key_and_follows_the_next_leader(self) -> None:
        c = Client(self.urls())
        self.addCleanup(c.close)
        c.close_session("s1")
        inner = self.stubs[1].handler
        new_leader = self.stubs[2].url

        def failing(r: Req) -> Reply:
            # the old leader: outcome unknown, naming the new leader
            self.leader = new_leader
            with self.mu:
                self.order.append(1)
            return Reply(504, err("timeout", "unknown"), {"X-Raftlock-Leader": new_leader})
        self.stubs[1].handler = failing
        del self.order[:]
        c.close_session("s1")
        self.assertEqual(self.order, [1, 2], "the retry went to the leader the failed answer named")
        k1 = self.stubs[1].matching("DELETE")[-1].key
        k2 = self.stubs[2].matching("DELETE")[-1].key
        self.assertIsNotNone(k1)
        self.assertEqual(k1, k2, "one Idempotency-Key across the failover")
        self.stubs[1].handler = inner
        c.close_session("s1")
        self.assertEqual(self.order[-1], 2, "and stays with it")


if __name__ == "__main__":
    unittest.main()
