"""Integration tests of docs/contract.md §4 against a real cluster (see test_integration.py):
elections with a handover seen by observe in one step, revocation learnt from the
keepalive, a watch resumed from an index, shared locks and semaphores."""

import os
import queue
import threading
import time
import unittest

from raftlock import Client, LimitMismatchError, SemaphoreFullError

from .test_integration import ENDPOINTS, unique


def collect(it, out: "queue.Queue") -> None:
    try:
        for x in it:
            out.put(x)
    except Exception as e:  # noqa: BLE001 -- handed to the test
        out.put(e)


@unittest.skipUnless(ENDPOINTS, "integration: RAFTLOCK_TEST_ENDPOINTS is not set (comma-separated API URLs of a running cluster); npm test sets it")
class S4IntegrationTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = Client(ENDPOINTS, token=os.environ.get("RAFTLOCK_TEST_TOKEN"))
        self.stop = threading.Event()
        self.addCleanup(self.stop.set)

    def follow(self, it) -> "queue.Queue":
        q: "queue.Queue" = queue.Queue()
        threading.Thread(target=collect, args=(it, q), daemon=True).start()
        return q

    def take(self, q: "queue.Queue"):
        x = q.get(timeout=10)
        if isinstance(x, Exception):
            raise x
        return x

    def test_election_handover_observe_and_revoke(self) -> None:
        name = unique("election")
        leaders = self.follow(self.client.observe(name, stop=self.stop))
        self.assertIsNone(self.take(leaders))
        s1, s2 = self.client.session(ttl=1.5), self.client.session(ttl=1.5)
        self.addCleanup(s1.close)
        self.addCleanup(s2.close)
        l1 = s1.campaign(name, "host-a")
        got = self.take(leaders)
        self.assertEqual((got["session_id"], got["value"], got["fencing_token"]), (s1.id, "host-a", l1.fencing_token))
        won: "queue.Queue" = queue.Queue()
        threading.Thread(target=lambda: won.put(s2.campaign(name, "host-b", wait=20)), daemon=True).start()
        l1.proclaim("host-a:2")
        self.assertEqual(self.take(leaders)["value"], "host-a:2")
        deadline = time.monotonic() + 10
        while self.client.get_lock(name)["waiters"] != 1:
            self.assertLess(time.monotonic(), deadline, "the second candidate never queued")
            time.sleep(0.01)
        l1.resign()
        l2 = won.get(timeout=10)
        self.assertGreater(l2.fencing_token, l1.fencing_token)
        got = self.take(leaders)  # one step: the resign and the win are one command
        self.assertEqual((got["session_id"], got["value"]), (s2.id, "host-b"))
        self.client.revoke(name)
        self.assertTrue(l2.lost.wait(5), "the revoked leadership was not ended by a keepalive")
        self.assertTrue(s2.is_open)
        self.assertIsNone(self.take(leaders))
        self.assertIsNone(self.client.leader(name))

    def test_watch_resumed_from_an_index_gives_exactly_the_rest(self) -> None:
        prefix = unique("watch") + "/"
        live = self.follow(self.client.watch(prefix, stop=self.stop))
        self.assertEqual(self.take(live)["event"], "synced")
        with self.client.session(ttl=5) as s:
            for i in range(3):
                s.lock(f"{prefix}l{i}").release()
            events = [self.take(live) for _ in range(6)]
            self.assertEqual([e["event"] for e in events], ["acquired", "released"] * 3)
            self.assertTrue(all(e["session_id"] == s.id for e in events))
            self.assertEqual([e["index"] for e in events], sorted(set(e["index"] for e in events)))
        resumed = self.follow(self.client.watch(prefix, from_index=events[0]["index"], stop=self.stop))
        self.assertEqual([self.take(resumed) for _ in range(5)], events[1:])

    def test_shared_locks_semaphores_and_revoked_permits(self) -> None:
        name = unique("s4")
        s1, s2 = self.client.session(ttl=1.5), self.client.session(ttl=1.5)
        self.addCleanup(s1.close)
        self.addCleanup(s2.close)
        r1, r2 = s1.lock(f"{name}/rw", shared=True), s2.lock(f"{name}/rw", shared=True)
        info = self.client.get_lock(f"{name}/rw")
        self.assertEqual((info["mode"], len(info["holders"])), ("shared", 2))
        p1 = s1.semaphore(f"{name}/pool", limit=2, permits=2)
        with self.assertRaises(SemaphoreFullError) as cm:
            s2.semaphore(f"{name}/pool", limit=2)
        self.assertEqual((cm.exception.in_use, cm.exception.limit), (2, 2))
        with self.assertRaises(LimitMismatchError):
            s2.semaphore(f"{name}/pool", limit=3)
        self.assertEqual(self.client.get_semaphore(f"{name}/pool")["holders"][0]["fencing_token"], p1.fencing_token)
        self.assertEqual(len(self.client.revoke(f"{name}/pool", semaphore=True)), 1)
        self.client.revoke(f"{name}/rw", session_id=s2.id)
        self.assertTrue(p1.lost.wait(5) and r2.lost.wait(5), "revoked grants not ended by a keepalive")
        self.assertTrue(r1.held)


if __name__ == "__main__":
    unittest.main()
