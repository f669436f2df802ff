"""Unit tests of the Python client against stub servers (tests/stub.py)."""

import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest

from raftlock import (Client, IdempotencyKeyReusedError, LockHeldError, LockLostError, OutcomeUnknownError,
                      SessionLostError, SessionNotFoundError, UnavailableError, default_safety_margin)
from raftlock.endpoints import MAX_RETRY_AFTER, parse_retry_after

from .stub import Reply, Stub, err, healthy


def wait_for(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


class StubCase(unittest.TestCase):
    def setUp(self) -> None:
        self.stub = Stub()
        self.addCleanup(self.stub.close)

    def client(self, **kw) -> Client:
        return Client([self.stub.url], **kw)


class LeaseTest(StubCase):
    def test_proof_is_send_time_of_last_ack_plus_ttl_minus_margin(self) -> None:
        before = time.monotonic()
        s = self.client().session(ttl=0.6)
        self.addCleanup(s.close)
        self.assertEqual(s.ttl, 0.6)
        self.assertAlmostEqual(default_safety_margin(0.6), 0.06)
        self.assertGreaterEqual(s.last_ack_sent_at, before)
        self.assertAlmostEqual(s.proven_until, s.last_ack_sent_at + 0.6 - 0.06, places=9)
        # the send time, never the answer's: no later than the server saw the request
        self.assertLessEqual(s.last_ack_sent_at, self.stub.matching("POST", "/v1/sessions")[0].at)
        self.assertEqual(self.stub.matching("POST", "/v1/sessions")[0].body, {"ttl_ms": 600})

    def test_keepalives_every_third_of_ttl_with_jitter(self) -> None:
        s = self.client().session(ttl=0.6)
        time.sleep(1.1)  # a window to count keepalives in, not a wait for a condition
        s.close()
        ka = self.stub.matching("POST", "/keepalive")
        self.assertTrue(2 <= len(ka) <= 6, f"{len(ka)} keepalives in 1.1 s with ttl 0.6 s")
        for a, b in zip(ka, ka[1:]):
            gap = b.at - a.at
            # 180-220 ms; timers never fire early, a loaded machine may fire them late
            self.assertTrue(0.175 <= gap <= 0.45, f"keepalive gap {gap:.3f} s")

    def test_lost_when_the_proof_runs_out(self) -> None:
        c = self.client(timeout=0.1)
        s = c.session(ttl=0.6)
        self.addCleanup(s.close)
        lk = s.lock("x")
        ok = healthy()
        self.stub.handler = lambda r: Reply(503, err("unavailable"), {"Retry-After": "0"}) if r.path.endswith("/keepalive") else ok(r)
        last_ack = s.last_ack_sent_at
        self.assertAlmostEqual(s.proven_until - last_ack, 0.54, places=6)
        self.assertTrue(s.lost.wait(2), "session not lost")
        lost_at = time.monotonic()
        self.assertGreaterEqual(lost_at, last_ack + 0.54)
        self.assertLess(lost_at, last_ack + 1.5)
        self.assertTrue(lk.lost.is_set() and not lk.held)
        self.assertIsInstance(s.error, SessionLostError)
        with self.assertRaises(LockLostError):
            lk.assert_held()
        # closed on the server so that waiters get the lock now
        wait_for(lambda: self.stub.matching("DELETE", "/v1/sessions/s1"), 3, "DELETE after loss")

    def test_session_not_found_loses_at_once_without_a_delete(self) -> None:
        s = self.client().session(ttl=3)
        ok = healthy(3000)
        self.stub.handler = lambda r: Reply(404, err("session_not_found")) if r.path.endswith("/keepalive") else ok(r)
        start = time.monotonic()
        self.assertTrue(s.lost.wait(3))
        self.assertLess(time.monotonic() - start, 2.5)
        self.assertIsInstance(s.error.__cause__, SessionNotFoundError)
        time.sleep(0.05)
        self.assertEqual(self.stub.matching("DELETE"), [])
        with self.assertRaises(SessionLostError):
            s.lock("x")


class RetryTest(StubCase):
    def test_504_retries_reuse_the_key_and_shrink_the_wait(self) -> None:
        self._lock_after_retries(Reply(504, err("timeout"), delay=0.03), Reply(504, err("timeout"), delay=0.03))

    def test_408_is_no_answer_the_call_is_sent_again_with_the_same_key(self) -> None:
        """A 408 (the HTTP layer did not receive the request whole) after an attempt of
        unknown outcome does not end the call: it is sent again, and the first answer wins."""
        fastify_408 = {"error": "Request Timeout", "message": "Client Timeout", "statusCode": 408}
        self._lock_after_retries(Reply(504, err("timeout"), delay=0.03), Reply(408, fastify_408, delay=0.03))

    def _lock_after_retries(self, *replies: Reply) -> None:
        """The first acquire attempts get ``replies``, the next one the grant: every attempt
        carries the same key and the name as one segment, a retry asks only for the wait
        that is left, and the grant is held, then released once with its token."""
        s = self.client().session(ttl=10)
        self.addCleanup(s.close)
        ok, n = healthy(10000), [0]

        def h(r):
            if r.path.endswith("/acquire"):
                n[0] += 1
                if n[0] <= len(replies):
                    return replies[n[0] - 1]
            return ok(r)
        self.stub.handler = h
        lk = s.lock("jobs/check", wait=20)
        acq = self.stub.matching("POST", "/acquire")
        self.assertEqual(len(acq), len(replies) + 1)
        self.assertTrue(acq[0].key and all(r.key == acq[0].key for r in acq))
        self.assertEqual(acq[0].path, "/v1/locks/jobs%2Fcheck/acquire")
        self.assertLess(acq[-1].body["wait_ms"], acq[0].body["wait_ms"])
        self.assertEqual(lk.fencing_token, 11)
        self.assertTrue(lk.held)
        self.assertEqual(self.stub.matching("POST", "/release"), [])
        lk.release()
        rel = self.stub.matching("POST", "/release")
        self.assertEqual([r.body for r in rel], [{"session_id": "s1", "fencing_token": 11}])
        self.assertTrue(lk.lost.is_set() and not lk.held)
        lk.release()
        self.assertEqual(len(self.stub.matching("POST", "/release")), 1, "a second release sent something")

    def test_outcome_unknown_releases_the_name(self) -> None:
        s = self.client(retry_budget=0.4).session(ttl=10)
        self.addCleanup(s.close)
        ok = healthy(10000)
        self.stub.handler = lambda r: Reply(504, err("timeout")) if r.path.endswith("/acquire") else ok(r)
        with self.assertRaises(OutcomeUnknownError) as cm:
            s.lock("billing")
        self.assertEqual(cm.exception.idempotency_key, self.stub.matching("POST", "/acquire")[0].key)
        self.assertIsInstance(cm.exception, UnavailableError)
        rel = self.stub.matching("POST", "/v1/locks/billing/release")
        self.assertEqual([r.body for r in rel], [{"session_id": "s1"}])

    def test_attempt_timeouts_that_race_a_grant_release_it(self) -> None:
        # the server grants 300 ms after each request; the client gives up before
        s = self.client(timeout=0.1, retry_budget=0.25).session(ttl=10)
        self.addCleanup(s.close)
        ok = healthy(10000)
        self.stub.handler = lambda r: Reply(200, ok(r).body, delay=0.3) if r.path.endswith("/acquire") else ok(r)
        with self.assertRaises(OutcomeUnknownError):
            s.lock("report")
        self.assertEqual(len(self.stub.matching("POST", "/v1/locks/report/release")), 1)

    def test_an_interrupt_during_acquire_releases_the_name(self) -> None:
        c = self.client()
        s = c.session(ttl=10)
        self.addCleanup(s.close)
        real = c._transport.call

        def interrupted(method, path, mode, **kw):
            a = real(method, path, mode, **kw)
            if path.endswith("/acquire"):
                raise KeyboardInterrupt()  # Ctrl-C lands after the server granted
            return a
        c._transport.call = interrupted
        with self.assertRaises(KeyboardInterrupt):
            s.lock("nightly")
        self.assertEqual(len(self.stub.matching("POST", "/v1/locks/nightly/release")), 1)

    def test_lock_held_is_definite_and_sends_no_release(self) -> None:
        s = self.client().session(ttl=10)
        self.addCleanup(s.close)
        ok = healthy(10000)
        held = err("lock_held", holder={"session_id": "other", "owner": "ci-7", "fencing_token": 9})
        self.stub.handler = lambda r: Reply(409, held) if r.path.endswith("/acquire") else ok(r)
        with self.assertRaises(LockHeldError) as cm:
            s.lock("x")
        self.assertEqual((cm.exception.holder.session_id, cm.exception.holder.fencing_token), ("other", 9))
        self.assertEqual(self.stub.matching("POST", "/acquire")[0].body["wait_ms"], 0)
        self.assertEqual(self.stub.matching("POST", "/release"), [])

    def test_a_wait_refused_at_once_is_not_asked_again(self) -> None:
        # a share is never upgraded, a wait of the session it may not join: the server
        # refuses at once; that wait did not run out, so it is not queued again (_wait_ran_out)
        s = self.client().session(ttl=10)
        self.addCleanup(s.close)
        ok = healthy(10000)
        self.stub.handler = lambda r: Reply(409, err("lock_held")) if r.path.endswith("/acquire") else ok(r)
        with self.assertRaises(LockHeldError):
            s.lock("x", wait=2)
        self.assertEqual(len(self.stub.matching("POST", "/acquire")), 1)

    def test_idempotency_key_reused_is_its_own_error_and_never_retried(self) -> None:
        c = Client([self.stub.url, self.stub.url])
        s = c.session(ttl=10)
        self.addCleanup(s.close)
        ok = healthy(10000)
        reused = err("idempotency_key_reused", "the Idempotency-Key was first used for another request (another name)")
        self.stub.handler = lambda r: Reply(422, reused) if r.path.endswith("/acquire") else ok(r)
        with self.assertRaises(IdempotencyKeyReusedError) as cm:
            s.lock("x")
        acq = self.stub.matching("POST", "/acquire")
        self.assertEqual(len(acq), 1, "a 422 is definite: never retried")
        self.assertEqual((cm.exception.code, cm.exception.status), ("idempotency_key_reused", 422))
        self.assertEqual(cm.exception.idempotency_key, acq[0].key)
        self.assertIn("another name", str(cm.exception))
        self.assertNotIsInstance(cm.exception, (LockHeldError, UnavailableError))
        self.assertEqual(self.stub.matching("POST", "/release"), [], "nothing was applied: nothing to clean up")

    def test_closing_the_session_ends_a_wait_at_once(self) -> None:
        s = self.client().session(ttl=10)
        ok = healthy(10000)
        self.stub.handler = lambda r: Reply(409, err("lock_held"), delay=5) if r.path.endswith("/acquire") else ok(r)
        def close_quietly() -> None:
            try:
                s.close()
            except UnavailableError:
                pass  # the stub may be gone already; the point is the wait ending
        threading.Timer(0.2, close_quietly).start()
        start = time.monotonic()
        with self.assertRaises(SessionLostError):
            s.lock("x", wait=5)
        self.assertLess(time.monotonic() - start, 2)


class FailoverTest(unittest.TestCase):
    def test_retry_after_is_honoured(self) -> None:
        a, b = Stub(), Stub()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        a.handler = lambda r: Reply(503, err("unavailable"), {"Retry-After": "5"})
        c = Client([a.url, b.url])
        for _ in range(4):
            c.session(ttl=10).close()
        self.assertEqual(len(a.requests), 1, "the endpoint that said Retry-After: 5 was asked again")
        self.assertTrue(a.requests[0].key)

    def test_refused_everywhere_is_unavailable_not_unknown(self) -> None:
        with socket.socket() as sk:
            sk.bind(("127.0.0.1", 0))
            port = sk.getsockname()[1]
        with self.assertRaises(UnavailableError) as cm:
            Client([f"http://127.0.0.1:{port}"], retry_budget=0.3).session()
        self.assertNotIsInstance(cm.exception, OutcomeUnknownError)

    def _silent_listener(self) -> str:
        """Accepts connections and then does nothing."""
        ln = socket.socket()
        ln.bind(("127.0.0.1", 0))
        ln.listen(16)
        self.addCleanup(ln.close)
        return f"127.0.0.1:{ln.getsockname()[1]}"

    def test_a_handshake_that_never_completes_sent_nothing(self) -> None:
        addr = self._silent_listener()
        with self.assertRaises(UnavailableError) as cm:
            Client([f"https://{addr}"], timeout=0.1, retry_budget=0.3).session()
        self.assertNotIsInstance(cm.exception, OutcomeUnknownError)

    def test_a_request_sent_but_never_answered_is_outcome_unknown(self) -> None:
        addr = self._silent_listener()
        with self.assertRaises(OutcomeUnknownError) as cm:
            Client([f"http://{addr}"], timeout=0.1, retry_budget=0.3).session()
        self.assertTrue(cm.exception.idempotency_key)

    def test_retry_after_parsing(self) -> None:
        self.assertEqual(parse_retry_after(None, 1.0), 1.0)
        self.assertEqual(parse_retry_after("3", 1.0), 3.0)
        self.assertEqual(parse_retry_after("junk", 1.0), 1.0)
        self.assertEqual(parse_retry_after("99999", 1.0), MAX_RETRY_AFTER)
        self.assertAlmostEqual(parse_retry_after("Thu, 01 Jan 2026 00:00:04 GMT", 1.0, now_wall=1767225600.0), 4.0)

    def test_bad_config(self) -> None:
        for kw in ({"endpoints": []}, {"endpoints": ["ftp://x"]}, {"endpoints": ["nohost"]},
                   {"endpoints": ["http://a:1"], "cert_file": "x"}, {"endpoints": ["http://a:1"], "timeout": 0}):
            with self.assertRaises(Exception) as cm:
                Client(**kw)
            self.assertEqual(getattr(cm.exception, "code", None), "invalid_request", kw)


class ContextManagerTest(StubCase):
    def test_with_lock_closes_its_session(self) -> None:
        c = self.client(token="sekret")
        with c.lock("billing/nightly", ttl=10, wait=30, owner="w1") as lk:
            self.assertEqual(lk.fencing_token, 11)
            self.assertTrue(lk.held and not lk.lost.is_set())
        self.assertTrue(lk.lost.is_set())
        self.assertEqual(len(self.stub.matching("DELETE", "/v1/sessions/s1")), 1)
        self.assertEqual(self.stub.matching("POST", "/acquire")[0].body, {"session_id": "s1", "owner": "w1", "wait_ms": 30000})
        self.assertTrue(all(r.headers.get("authorization") == "Bearer sekret" for r in self.stub.requests))

    def test_a_lock_lost_inside_the_block_raises_on_the_way_out(self) -> None:
        c = self.client(timeout=0.1)
        ok = healthy()
        with self.assertRaises(LockLostError):
            with c.lock("x", ttl=0.6) as lk:
                self.stub.handler = lambda r: Reply(404, err("session_not_found")) if r.path.endswith("/keepalive") else ok(r)
                self.assertTrue(lk.lost.wait(2))


@unittest.skipUnless(shutil.which("openssl"), "TLS test: no openssl command to make certificates with")
class TlsTest(unittest.TestCase):
    def test_mutual_tls_with_ca_and_client_certificate(self) -> None:
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)

        def run(*args: str) -> None:
            subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
        # Python 3.13 verifies strictly (X509_STRICT): key usages and key identifiers present
        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
            "-days", "1", "-subj", "/CN=test-ca", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        common = "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n"
        for name, ext in (("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"), ("client", "extendedKeyUsage=clientAuth")):
            with open(os.path.join(d, f"{name}.ext"), "w") as f:
                f.write(common + ext + "\n")
            run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
            run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", f"{name}.crt", "-days", "1", "-extfile", f"{name}.ext")
        p = lambda n: os.path.join(d, n)  # noqa: E731
        sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        sctx.load_cert_chain(p("server.crt"), p("server.key"))
        sctx.load_verify_locations(p("ca.crt"))
        sctx.verify_mode = ssl.CERT_REQUIRED
        stub = Stub(ssl_context=sctx)
        self.addCleanup(stub.close)
        c = Client([stub.url], ca_file=p("ca.crt"), cert_file=p("client.crt"), key_file=p("client.key"))
        c.session(ttl=10).close()
        self.assertEqual(len(stub.matching("DELETE")), 1)
        # without the CA the server's certificate is refused before anything is sent
        with self.assertRaises(UnavailableError) as cm:
            Client([stub.url], retry_budget=0.3).session()
        self.assertNotIsInstance(cm.exception, OutcomeUnknownError)


if __name__ == "__main__":
    unittest.main()
