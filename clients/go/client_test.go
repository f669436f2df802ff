package raftlock

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLeaseProofIsSendTimeOfLastAckPlusTTLMinusMargin(t *testing.T) {
	st := newStub(t)
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	before := time.Now()
	s, err := NewSession(c, WithTTLDuration(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.TTL() != 600*time.Millisecond {
		t.Fatalf("ttl %v", s.TTL())
	}
	margin := DefaultSafetyMargin(600 * time.Millisecond)
	if margin != 60*time.Millisecond {
		t.Fatalf("margin %v", margin)
	}
	pu := s.ProvenUntil()
	sent := s.LastAckSentAt()
	if sent.Before(before) || pu != sent.Add(600*time.Millisecond-margin) {
		t.Fatalf("provenUntil %v, lastAck %v", pu, sent)
	}
	// The send time is the request's, never the answer's: it precedes the server's arrival.
	first := st.requests(isPath("POST", "/v1/sessions"))[0]
	if sent.After(first.At) {
		t.Fatalf("lastAck %v after the server saw the request at %v", sent, first.At)
	}
}

func TestKeepalivesEveryThirdOfTTLWithJitter(t *testing.T) {
	st := newStub(t)
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTLDuration(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // a window to count keepalives in, not a wait for a condition
	_ = s.Close()
	ka := st.requests(isPath("POST", "/keepalive"))
	// one every 180–220 ms: at most 6 in 1.1 s (timers never fire early); on a loaded
	// machine they may fire late, so only a generous upper bound on the gaps is checked.
	if len(ka) < 2 || len(ka) > 6 {
		t.Fatalf("%d keepalives in 1.1 s with ttl 600 ms", len(ka))
	}
	for i := 1; i < len(ka); i++ {
		gap := ka[i].At.Sub(ka[i-1].At)
		if gap < 175*time.Millisecond || gap > 450*time.Millisecond {
			t.Fatalf("keepalive gap %v, want ~200 ms ±10%%", gap)
		}
	}
}

func TestLostBeforeServerCouldExpireWhenKeepalivesFail(t *testing.T) {
	st := newStub(t)
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}, RequestTimeout: 100 * time.Millisecond})
	s, err := NewSession(c, WithTTLDuration(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := defaultHandler(600)
	st.setHandler(func(w http.ResponseWriter, r stubReq) {
		if strings.HasSuffix(r.Path, "/keepalive") {
			w.Header().Set("Retry-After", "0")
			reply(w, 503, errBody("unavailable", "no leader"))
			return
		}
		h(w, r)
	})
	lastAck := s.LastAckSentAt()
	deadline := s.ProvenUntil()
	if deadline != lastAck.Add(540*time.Millisecond) {
		t.Fatalf("proven until %v after the last acked send, want ttl − margin = 540ms", deadline.Sub(lastAck))
	}
	select {
	case <-s.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("session not lost")
	}
	lostAt := time.Now()
	// Never before the proof ran out; normally at once after (a loaded machine may fire
	// the timer late, hence the loose upper bound).
	if lostAt.Before(lastAck.Add(540*time.Millisecond)) || lostAt.After(lastAck.Add(1500*time.Millisecond)) {
		t.Fatalf("lost %v after the last acked send; want from ttl − margin = 540ms", lostAt.Sub(lastAck))
	}
	if !errors.Is(s.Err(), ErrSessionLost) || !errors.Is(s.Err(), ErrSessionExpired) {
		t.Fatalf("Err %v", s.Err())
	}
	if !s.ProvenUntil().IsZero() {
		t.Fatal("ProvenUntil not zero after loss")
	}
	// the client closes the session on the server so waiters get its locks now
	until := time.Now().Add(3 * time.Second)
	for len(st.requests(isPath("DELETE", "/v1/sessions/s1"))) == 0 {
		if time.Now().After(until) {
			t.Fatal("no DELETE after loss")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSessionNotFoundLosesAtOnce(t *testing.T) {
	st := newStub(t)
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTLDuration(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	h := defaultHandler(3000)
	st.setHandler(func(w http.ResponseWriter, r stubReq) {
		if strings.HasSuffix(r.Path, "/keepalive") {
			reply(w, 404, errBody("session_not_found", "unknown session"))
			return
		}
		h(w, r)
	})
	start := time.Now()
	select {
	case <-s.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("session not lost")
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Fatalf("lost after %v; the first keepalive (~1 s) should end it", d)
	}
	if !errors.Is(s.Err(), ErrSessionLost) || !errors.Is(s.Err(), ErrSessionNotFound) {
		t.Fatalf("Err %v", s.Err())
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(st.requests(isPath("DELETE", ""))); n != 0 {
		t.Fatalf("%d DELETEs of a session the server does not know", n)
	}
	m := NewMutex(s, "x")
	if err := m.Lock(context.Background()); !errors.Is(err, ErrSessionLost) {
		t.Fatalf("Lock on a lost session: %v", err)
	}
}

func TestRetriesAfter504ReuseTheIdempotencyKeyAndShrinkTheWait(t *testing.T) {
	lockAfterRetries(t, reply504, reply504)
}

// A 408 is the HTTP layer saying the request did not arrive whole: no answer to the call.
// After an attempt whose outcome is unknown (504) it must not end the call as a failure:
// the call is sent again with the same key and the first answer is its result.
func TestA408IsNoAnswerTheCallIsSentAgainWithTheSameKey(t *testing.T) {
	lockAfterRetries(t, reply504, reply408)
}

func reply504(w http.ResponseWriter) { reply(w, 504, errBody("timeout", "not known to be committed")) }

// reply408 answers as the server's HTTP layer (fastify) does when a request did not arrive whole
func reply408(w http.ResponseWriter) {
	reply(w, 408, map[string]interface{}{"error": "Request Timeout", "message": "Client Timeout", "statusCode": 408})
}

// lockAfterRetries locks a Mutex whose first acquire attempts get `replies`, each after
// 30 ms, and the next one the grant: every attempt carries the same Idempotency-Key and
// the name as one segment, a retry asks only for the wait that is left, and the grant is
// held, then released with its token.
func lockAfterRetries(t *testing.T, replies ...func(http.ResponseWriter)) {
	t.Helper()
	st := newStub(t)
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int32
	h := defaultHandler(10000)
	st.setHandler(func(w http.ResponseWriter, r stubReq) {
		if strings.HasSuffix(r.Path, "/acquire") {
			if k := int(atomic.AddInt32(&n, 1)); k <= len(replies) {
				time.Sleep(30 * time.Millisecond)
				replies[k-1](w)
				return
			}
		}
		h(w, r)
	})
	m := NewMutex(s, "jobs/check")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	acq := st.requests(isPath("POST", "/acquire"))
	if len(acq) != len(replies)+1 {
		t.Fatalf("%d acquires, want %d", len(acq), len(replies)+1)
	}
	for _, r := range acq {
		if r.Key == "" || r.Key != acq[0].Key {
			t.Fatalf("keys differ: %q vs %q", r.Key, acq[0].Key)
		}
		if r.Path != "/v1/locks/jobs%2Fcheck/acquire" {
			t.Fatalf("path %s: the name must be one segment", r.Path)
		}
	}
	w0, wn := acq[0].Body["wait_ms"].(float64), acq[len(acq)-1].Body["wait_ms"].(float64)
	if !(wn < w0) {
		t.Fatalf("retry asked for wait_ms %v, first %v: the retry asks only for what is left", wn, w0)
	}
	if m.FencingToken() != 11 || !m.Held() {
		t.Fatalf("token %d held %v", m.FencingToken(), m.Held())
	}
	if len(st.requests(isPath("POST", "/release"))) != 0 {
		t.Fatal("a granted lock was released")
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	rel := st.requests(isPath("POST", "/release"))
	if len(rel) != 1 || rel[0].Body["fencing_token"].(float64) != 11 || rel[0].Body["session_id"] != "s1" {
		t.Fatalf("release %+v", rel)
	}
	if m.Held() {
		t.Fatal("held after Unlock")
	}
}

func TestOutcomeUnknownReleasesTheName(t *testing.T) {
	st := newStub(t)
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}, RetryBudget: 400 * time.Millisecond})
	s, err := NewSession(c, WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := defaultHandler(10000)
	st.setHandler(func(w http.ResponseWriter, r stubReq) {
		if strings.HasSuffix(r.Path, "/acquire") {
			reply(w, 504, errBody("timeout", "not known to be committed"))
			return
		}
		h(w, r)
	})
	m := NewMutex(s, "billing")
	err = m.TryLock(context.Background())
	var e *Error
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, ErrUnavailable) || !errors.As(err, &e) || e.IdempotencyKey == "" {
		t.Fatalf("want ErrOutcomeUnknown with a key, got %v", err)
	}
	if e.IdempotencyKey != st.requests(isPath("POST", "/acquire"))[0].Key {
		t.Fatal("the error's key is not the one sent")
	}
	rel := st.requests(isPath("POST", "/v1/locks/billing/release"))
	if len(rel) != 1 || rel[0].Body["session_id"] != "s1" {
		t.Fatalf("want one release of billing in s1 after an unknown outcome, got %+v", rel)
	}
}

func TestGivingUpOnAWaitReleasesAGrantThatRacedIt(t *testing.T) {
	st := newStub(t)
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := defaultHandler(10000)
	granted := make(chan struct{}, 1)
	st.setHandler(func(w http.ResponseWriter, r stubReq) {
		if strings.HasSuffix(r.Path, "/acquire") {
			// the server grants 300 ms after the request, whether or not the caller still listens
			time.Sleep(300 * time.Millisecond)
			granted <- struct{}{}
			h(w, r)
			return
		}
		h(w, r)
	})
	m := NewMutex(s, "report")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := m.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	rel := st.requests(isPath("POST", "/v1/locks/report/release"))
	if len(rel) != 1 || rel[0].Body["session_id"] != "s1" {
		t.Fatalf("want a release of report in s1 when Lock gives up, got %+v", rel)
	}
	if m.Held() || m.FencingToken() != 0 {
		t.Fatal("a mutex that gave up claims the lock")
	}
	<-granted
}

func TestLockHeldIsDefiniteAndSendsNoRelease(t *testing.T) {
	st := newStub(t)
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := defaultHandler(10000)
	st.setHandler(func(w http.ResponseWriter, r stubReq) {
		if strings.HasSuffix(r.Path, "/acquire") {
			b := errBody("lock_held", "held")
			b["error"].(map[string]interface{})["holder"] = map[string]interface{}{"session_id": "other", "owner": "ci-7", "fencing_token": 9}
			reply(w, 409, b)
			return
		}
		h(w, r)
	})
	m := NewMutex(s, "x")
	err = m.TryLock(context.Background())
	var e *Error
	if !errors.Is(err, ErrLocked) || !errors.As(err, &e) || e.Holder == nil || e.Holder.SessionID != "other" || e.Holder.FencingToken != 9 {
		t.Fatalf("want ErrLocked with the holder, got %v", err)
	}
	if st.requests(isPath("POST", "/acquire"))[0].Body["wait_ms"].(float64) != 0 {
		t.Fatal("TryLock must not wait")
	}
	if n := len(st.requests(isPath("POST", "/release"))); n != 0 {
		t.Fatalf("%d releases after a definite lock_held", n)
	}
}

// A wait the server refuses at once (a share is never upgraded; a wait of the session it
// may not join) did not run out: Lock returns ErrLocked after one request instead of
// sending it again for the rest of ctx (waitRanOut).
func TestAWaitRefusedAtOnceIsNotAskedAgain(t *testing.T) {
	st := newStub(t)
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := defaultHandler(10000)
	st.setHandler(func(w http.ResponseWriter, r stubReq) {
		if strings.HasSuffix(r.Path, "/acquire") {
			reply(w, 409, errBody("lock_held", "held shared by this session: a share is never upgraded"))
			return
		}
		h(w, r)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = NewMutex(s, "x").Lock(ctx)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("want ErrLocked, got %v", err)
	}
	if n := len(st.requests(isPath("POST", "/acquire"))); n != 1 {
		t.Fatalf("%d acquires sent for one refused at once", n)
	}
}

func TestIdempotencyKeyReusedIsItsOwnErrorNeverRetried(t *testing.T) {
	st := newStub(t)
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL, st.srv.URL}})
	s, err := NewSession(c, WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := defaultHandler(10000)
	st.setHandler(func(w http.ResponseWriter, r stubReq) {
		if strings.HasSuffix(r.Path, "/acquire") {
			reply(w, 422, errBody("idempotency_key_reused", "the Idempotency-Key was first used for another request (another name); nothing was applied"))
			return
		}
		h(w, r)
	})
	err = NewMutex(s, "x").TryLock(context.Background())
	acq := st.requests(isPath("POST", "/acquire"))
	var e *Error
	if !errors.Is(err, ErrIdempotencyKeyReused) || !errors.As(err, &e) || e.Status != 422 || e.IdempotencyKey != acq[0].Key || !strings.Contains(e.Error(), "another name") {
		t.Fatalf("want ErrIdempotencyKeyReused naming the key %q, got %#v", acq[0].Key, err)
	}
	if errors.Is(err, ErrLocked) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("%v matches another sentinel", err)
	}
	if len(acq) != 1 {
		t.Fatalf("%d acquire attempts: a 422 is definite, never retried", len(acq))
	}
	if n := len(st.requests(isPath("POST", "/release"))); n != 0 {
		t.Fatalf("%d releases after a definite 422: nothing was applied", n)
	}
}

func TestFailoverHonoursRetryAfter(t *testing.T) {
	a, b := newStub(t), newStub(t)
	a.setHandler(func(w http.ResponseWriter, r stubReq) {
		w.Header().Set("Retry-After", "5")
		reply(w, 503, errBody("unavailable", "no leader"))
	})
	c := newTestClient(t, Config{Endpoints: []string{a.srv.URL, b.srv.URL}})
	for i := 0; i < 4; i++ {
		if _, _, err := c.openSession(context.Background(), 0, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(a.requests(nil)); n != 1 {
		t.Fatalf("endpoint that said Retry-After: 5 was asked %d times within 5 s", n)
	}
	if n := len(b.requests(nil)); n != 4 {
		t.Fatalf("healthy endpoint asked %d times", n)
	}
	// keyed: the failover reused the key of the 503'd attempt
	if a.requests(nil)[0].Key == "" {
		t.Fatal("no Idempotency-Key")
	}
}

func TestUnavailableWhenEveryEndpointRefuses(t *testing.T) {
	st := newStub(t)
	url := st.srv.URL
	st.srv.Close() // a port nobody listens on
	c := newTestClient(t, Config{Endpoints: []string{url}, RetryBudget: 300 * time.Millisecond})
	_, err := NewSession(c)
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("connection refused must be plain unavailable (nothing sent): %v", err)
	}
}

func TestBearerToken(t *testing.T) {
	st := newStub(t)
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}, Token: "sekret"})
	s, err := NewSession(c, WithTTL(10), WithOwner("billing-7"))
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	for _, r := range st.requests(nil) {
		if r.Auth != "Bearer sekret" {
			t.Fatalf("%s %s without the token: %q", r.Method, r.Path, r.Auth)
		}
	}
	if st.requests(nil)[0].Body["owner"] != "billing-7" || st.requests(nil)[0].Body["ttl_ms"].(float64) != 10000 {
		t.Fatalf("open body %+v", st.requests(nil)[0].Body)
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []Config{{}, {Endpoints: []string{"ftp://x"}}, {Endpoints: []string{"nohost"}}, {Endpoints: []string{"http://a:1"}, CertFile: "x"}, {Endpoints: []string{"http://a:1"}, CAFile: "/nonexistent"}} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidRequest) {
			t.Fatalf("%+v: want ErrInvalidRequest, got %v", cfg, err)
		}
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{"": time.Second, "3": 3 * time.Second, "junk": time.Second, "99999": maxRetryAfter, now.Add(4 * time.Second).Format(http.TimeFormat): 4 * time.Second}
	for in, want := range cases {
		if got := parseRetryAfter(in, time.Second, now); got != want {
			t.Fatalf("%q: %v, want %v", in, got, want)
		}
	}
}

func TestEnvironmentPointsAProgramAtACluster(t *testing.T) {
	st := newStub(t)
	t.Setenv("RAFTLOCK_ENDPOINTS", st.srv.URL)
	t.Setenv("RAFTLOCK_TOKEN", "from-env")
	c := newTestClient(t, Config{Endpoints: []string{"http://127.0.0.1:2379"}})
	if eps := c.Endpoints(); len(eps) != 1 || eps[0] != st.srv.URL {
		t.Fatalf("endpoints %v", eps)
	}
	s, err := NewSession(c)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if r := st.requests(nil)[0]; r.Auth != "Bearer from-env" || len(r.Body) != 0 {
		t.Fatalf("auth %q body %v (no ttl: the cluster's default)", r.Auth, r.Body)
	}
}

// A listener that accepts connections and then does nothing: with https:// the TLS
// handshake never completes (nothing of the request was sent); with http:// the request is
// sent and never answered (its outcome is unknown).
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

func TestAHandshakeThatNeverCompletesSentNothing(t *testing.T) {
	addr := silentListener(t)
	c := newTestClient(t, Config{Endpoints: []string{"https://" + addr}, RequestTimeout: 100 * time.Millisecond, RetryBudget: 300 * time.Millisecond})
	_, err := NewSession(c)
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("a TLS handshake that timed out sent nothing: want plain unavailable, got %v", err)
	}
}

func TestARequestSentButNeverAnsweredIsOutcomeUnknown(t *testing.T) {
	addr := silentListener(t)
	c := newTestClient(t, Config{Endpoints: []string{"http://" + addr}, RequestTimeout: 100 * time.Millisecond, RetryBudget: 300 * time.Millisecond})
	_, err := NewSession(c)
	var e *Error
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.As(err, &e) || e.IdempotencyKey == "" {
		t.Fatalf("want ErrOutcomeUnknown with the key, got %v", err)
	}
}
