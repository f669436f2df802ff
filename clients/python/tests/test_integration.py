"""Integration tests against a real cluster: RAFTLOCK_TEST_ENDPOINTS=http://127.0.0.1:...,...
(npm test's test/clients/go-python.test.ts starts one and sets it)."""

import os
import threading
import time
import unittest

from raftlock import Client, LockHeldError, SessionNotFoundError

ENDPOINTS = os.environ.get("RAFTLOCK_TEST_ENDPOINTS", "")


def unique(what: str) -> str:
    return f"py-it/{what}-{time.time_ns()}"


@unittest.skipUnless(ENDPOINTS, "integration: RAFTLOCK_TEST_ENDPOINTS is not set (comma-separated API URLs of a running cluster); npm test sets it")
class IntegrationTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = Client(ENDPOINTS, token=os.environ.get("RAFTLOCK_TEST_TOKEN"))

    def test_mutual_exclusion_and_increasing_tokens(self) -> None:
        name = unique("mutex")
        mu = threading.Lock()
        state = {"inside": 0, "max": 0}
        tokens = []
        errors = []

        def worker(i: int) -> None:
            try:
                for _ in range(4):
                    with self.client.lock(name, ttl=5, wait=30, owner=f"py-worker-{i}") as lk:
                        with mu:
                            state["inside"] += 1
                            state["max"] = max(state["max"], state["inside"])
                            tokens.append(lk.fencing_token)
                        time.sleep(0.005)  # widen the critical section
                        if not lk.held:
                            errors.append(f"worker {i}: not held inside the critical section")
                        with mu:
                            state["inside"] -= 1
            except Exception as e:  # noqa: BLE001 -- reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        self.assertEqual(state["max"], 1)
        self.assertEqual(len(tokens), 12)
        self.assertEqual(tokens, sorted(set(tokens)), f"tokens not strictly increasing: {tokens}")
        self.assertFalse(self.client.get_lock(name)["held"], "every with-block released")

    def test_held_timeout_and_close(self) -> None:
        name = unique("try")
        s1 = self.client.session(ttl=5, owner="holder")
        s2 = self.client.session(ttl=5)
        self.addCleanup(s1.close)
        self.addCleanup(s2.close)
        l1 = s1.lock(name)
        with self.assertRaises(LockHeldError) as cm:
            s2.lock(name)
        self.assertEqual((cm.exception.holder.session_id, cm.exception.holder.fencing_token), (s1.id, l1.fencing_token))
        # a wait that runs out leaves no grant behind
        start = time.monotonic()
        with self.assertRaises(LockHeldError):
            s2.lock(name, wait=0.3)
        self.assertGreaterEqual(time.monotonic() - start, 0.3)
        self.assertTrue(l1.check())
        old = l1.fencing_token
        s1.close()
        self.assertTrue(l1.lost.is_set())
        self.assertFalse(self.client.get_lock(name)["held"])
        l2 = s2.lock(name)
        self.assertGreater(l2.fencing_token, old)
        self.assertFalse(l1.check())
        l2.release()
        self.assertFalse(self.client.get_lock(name)["held"])

    def test_a_session_ended_elsewhere_is_lost(self) -> None:
        s = self.client.session(ttl=3)
        self.addCleanup(s.close)
        self.client.close_session(s.id)  # an operator ends it
        self.assertTrue(s.lost.wait(3), "not lost after the server ended the session")
        self.assertIsInstance(s.error.__cause__, SessionNotFoundError)


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(ENDPOINTS, "integration: RAFTLOCK_TEST_ENDPOINTS is not set (comma-separated API URLs of a running cluster); npm test sets it")
class LockSetIntegrationTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = Client(ENDPOINTS, token=os.environ.get("RAFTLOCK_TEST_TOKEN"))

    def test_opposite_order_deadlocks_per_name_and_never_with_lock_all(self) -> None:
        from raftlock import DeadlockError
        a1, a2 = unique("acct1"), unique("acct2")
        sa, sb = self.client.session(ttl=20), self.client.session(ttl=20)
        try:
            la1, lb2 = sa.lock(a1), sb.lock(a2)
            got = {}
            t = threading.Thread(target=lambda: got.setdefault("a2", sa.lock(a2, wait=30)))
            t.start()
            deadline = time.monotonic() + 10
            while self.client.get_lock(a2)["waiters"] != 1:
                self.assertLess(time.monotonic(), deadline, "a did not start waiting")
                time.sleep(0.02)
            started = time.monotonic()
            with self.assertRaises(DeadlockError) as cm:
                sb.lock(a1, wait=30)
            self.assertLess(time.monotonic() - started, 10, "refused at once")
            self.assertEqual(cm.exception.cycle[0], {"session_id": sb.id, "name": a1})
            lb2.release()
            t.join(30)
            self.assertEqual(got["a2"].name, a2)
            la1.release()
            got["a2"].release()
        finally:
            sa.close()
            sb.close()
        errors = []

        def transfer(names) -> None:
            try:
                for _ in range(4):
                    with self.client.locks(names, ttl=20, wait=30) as ls:
                        if not ls.held or set(ls.fencing_tokens) != set(names):
                            errors.append("a set not wholly held")
            except Exception as e:  # noqa: BLE001 -- reported below
                errors.append(repr(e))
        threads = [threading.Thread(target=transfer, args=(n,)) for n in ([a1, a2], [a2, a1])]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        self.assertEqual(errors, [])
