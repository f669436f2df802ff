package raftlock

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// grantsStub answers like a healthy cluster whose keepalive answer lists the grants in
// held (the test removes one to play a revoke).
type grantsStub struct {
	mu   sync.Mutex
	held []map[string]interface{}
	tok  int64
}

func (g *grantsStub) remove(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.held[:0]
	for _, h := range g.held {
		if h["name"] != name {
			out = append(out, h)
		}
	}
	g.held = out
}

func (g *grantsStub) handler(ttlMs int) func(w http.ResponseWriter, r stubReq) {
	return func(w http.ResponseWriter, r stubReq) {
		g.mu.Lock()
		defer g.mu.Unlock()
		grant := func(kind, name string, extra map[string]interface{}) map[string]interface{} {
			g.tok++
			g.held = append(g.held, map[string]interface{}{"kind": kind, "name": name, "fencing_token": g.tok})
			out := map[string]interface{}{"name": name, "session_id": "s1", "fencing_token": g.tok, "ttl_ms": ttlMs}
			for k, v := range extra {
				out[k] = v
			}
			return out
		}
		switch {
		case r.Method == "POST" && r.Path == "/v1/sessions":
			reply(w, 201, map[string]interface{}{"session_id": "s1", "ttl_ms": ttlMs})
		case strings.HasSuffix(r.Path, "/keepalive"):
			reply(w, 200, map[string]interface{}{"session_id": "s1", "ttl_ms": ttlMs, "grants": append([]map[string]interface{}{}, g.held...)})
		case r.Method == "DELETE":
			reply(w, 200, map[string]interface{}{"released": []string{}})
		case strings.HasPrefix(r.Path, "/v1/locks/") && strings.HasSuffix(r.Path, "/acquire"):
			reply(w, 200, grant("lock", strings.TrimSuffix(strings.TrimPrefix(r.Path, "/v1/locks/"), "/acquire"), nil))
		case strings.HasPrefix(r.Path, "/v1/semaphores/") && strings.HasSuffix(r.Path, "/acquire"):
			reply(w, 200, grant("semaphore", strings.TrimSuffix(strings.TrimPrefix(r.Path, "/v1/semaphores/"), "/acquire"), map[string]interface{}{"permits": r.Body["permits"], "limit": r.Body["limit"]}))
		case strings.HasSuffix(r.Path, "/campaign"):
			reply(w, 200, grant("election", strings.TrimSuffix(strings.TrimPrefix(r.Path, "/v1/elections/"), "/campaign"), map[string]interface{}{"value": r.Body["value"]}))
		case strings.HasSuffix(r.Path, "/proclaim"):
			reply(w, 200, map[string]interface{}{"name": "e", "value": r.Body["value"]})
		case strings.HasSuffix(r.Path, "/resign"):
			reply(w, 200, map[string]interface{}{"name": "e", "resigned": true})
		case strings.HasSuffix(r.Path, "/release"):
			reply(w, 200, map[string]interface{}{"name": "x", "released": true})
		case strings.HasSuffix(r.Path, "/revoke"):
			reply(w, 200, map[string]interface{}{"name": "x", "revoked": []map[string]interface{}{{"session_id": "s1", "fencing_token": 11}}})
		default:
			reply(w, 404, errBody("not_found", "no route"))
		}
	}
}

func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestKeepaliveAnswerEndsRevokedGrantsAndKeepsTheRest(t *testing.T) {
	st := newStub(t)
	g := &grantsStub{}
	st.setHandler(g.handler(600))
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTLDuration(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	m, kept := NewMutex(s, "taken"), NewMutex(s, "kept", WithShared())
	sem := NewSemaphore(s, "pool", 3, WithPermits(2))
	el := NewElection(s, "sched")
	for _, err := range []error{m.Lock(ctx), kept.Lock(ctx), sem.Acquire(ctx)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	l, err := el.Campaign(ctx, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Held() || !sem.Held() || !l.Held() || l.Value() != "host-a" {
		t.Fatal("not held after the grants")
	}
	body := st.requests(isPath("POST", "/kept/acquire"))[0].Body
	if body["mode"] != "shared" {
		t.Fatalf("shared acquire body %v", body)
	}
	if b := st.requests(isPath("POST", "/pool/acquire"))[0].Body; b["limit"] != float64(3) || b["permits"] != float64(2) {
		t.Fatalf("semaphore body %v", b)
	}
	g.remove("taken")
	g.remove("pool")
	g.remove("sched")
	eventually(t, 3*time.Second, "the keepalive to end the revoked grants", func() bool { return !m.Held() && !sem.Held() })
	select {
	case <-l.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("the leadership's Done did not close")
	}
	if !errors.Is(m.Err(), ErrLockLost) || !strings.Contains(m.Err().Error(), "revoked") || !errors.Is(sem.Err(), ErrLockLost) || !errors.Is(l.Err(), ErrLockLost) {
		t.Fatalf("errors %v / %v / %v", m.Err(), sem.Err(), l.Err())
	}
	n := len(st.requests(isPath("POST", "/keepalive")))
	eventually(t, 3*time.Second, "another keepalive", func() bool { return len(st.requests(isPath("POST", "/keepalive"))) > n })
	if !kept.Held() || kept.Err() != nil {
		t.Fatal("a grant the keepalive still lists was ended")
	}
	if reads := st.requests(func(r stubReq) bool { return r.Method == "GET" }); len(reads) != 0 {
		t.Fatalf("reads beside the keepalives: %v", reads)
	}
}

func TestMaxHoldIsSentAndHeldEndsBeforeIt(t *testing.T) {
	st := newStub(t)
	g := &grantsStub{}
	st.setHandler(g.handler(2000))
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTLDuration(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := NewMutex(s, "brief", WithMaxHold(300*time.Millisecond))
	start := time.Now()
	if err := m.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b := st.requests(isPath("POST", "/brief/acquire"))[0].Body; b["max_hold_ms"] != float64(300) {
		t.Fatalf("body %v", b)
	}
	eventually(t, 2*time.Second, "Held to turn false", func() bool { return !m.Held() })
	if el := time.Since(start); el >= 300*time.Millisecond {
		t.Fatalf("Held until %v, past the max hold", el)
	}
	if err := NewMutex(s, "x", WithMaxHold(50*time.Millisecond)).Lock(context.Background()); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("a 50ms max hold: %v", err)
	}
}

// A re-acquire can return a grant an earlier request of the session made (one given up
// on, delivered late by a relay) with that request's max hold: the answer's max_hold_ms
// bounds Held though this Mutex asked for none (jepsen-lite seed 380155236).
func TestAnsweredMaxHoldBoundsHeldThoughNoneWasAsked(t *testing.T) {
	st := newStub(t)
	g := &grantsStub{}
	inner := g.handler(2000)
	st.setHandler(func(w http.ResponseWriter, r stubReq) {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/given-up/acquire") {
			g.mu.Lock()
			g.tok++
			tok := g.tok
			g.held = append(g.held, map[string]interface{}{"kind": "lock", "name": "given-up", "fencing_token": tok})
			g.mu.Unlock()
			reply(w, 200, map[string]interface{}{"name": "given-up", "session_id": "s1", "fencing_token": tok, "ttl_ms": 2000, "max_hold_ms": 300})
			return
		}
		inner(w, r)
	})
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTLDuration(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := NewMutex(s, "given-up")
	start := time.Now()
	if err := m.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b := st.requests(isPath("POST", "/given-up/acquire"))[0].Body; b["max_hold_ms"] != nil {
		t.Fatalf("asked for a max hold: %v", b)
	}
	eventually(t, 2*time.Second, "Held to turn false", func() bool { return !m.Held() })
	if el := time.Since(start); el >= 300*time.Millisecond {
		t.Fatalf("Held until %v, past the grant's max hold", el)
	}
}

func TestElectionCallsAndLeadershipLifecycle(t *testing.T) {
	st := newStub(t)
	g := &grantsStub{}
	st.setHandler(g.handler(2000))
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTLDuration(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	l, err := NewElection(s, "jobs/sched", WithElectionMaxHold(time.Minute)).Campaign(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	b := st.requests(isPath("POST", "/campaign"))[0]
	if b.Path != "/v1/elections/jobs%2Fsched/campaign" || b.Body["value"] != "v1" || b.Body["session_id"] != "s1" || b.Body["max_hold_ms"] != float64(60000) {
		t.Fatalf("campaign %s %v", b.Path, b.Body)
	}
	if err := l.Proclaim(ctx, "v2"); err != nil || l.Value() != "v2" {
		t.Fatalf("proclaim: %v %q", err, l.Value())
	}
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done open after Resign")
	}
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(st.requests(isPath("POST", "/resign"))); n != 1 {
		t.Fatalf("%d resigns", n)
	}
	if err := l.Proclaim(ctx, "v3"); !errors.Is(err, ErrLockLost) {
		t.Fatalf("proclaim after resign: %v", err)
	}
	// a lost campaign names the leader
	st.setHandler(func(w http.ResponseWriter, r stubReq) {
		if strings.HasSuffix(r.Path, "/campaign") {
			reply(w, 409, map[string]interface{}{"error": map[string]interface{}{"code": "lock_held", "message": "led", "leader": map[string]interface{}{"session_id": "s9", "value": "host-z", "fencing_token": 77}}})
			return
		}
		if r.Method == "GET" && strings.HasPrefix(r.Path, "/v1/elections/") {
			reply(w, 200, map[string]interface{}{"name": "jobs/sched", "leader": map[string]interface{}{"session_id": "s9", "value": "host-z", "fencing_token": 77}})
			return
		}
		g.handler(2000)(w, r)
	})
	_, err = NewElection(s, "jobs/sched").TryCampaign(ctx, "v1")
	var e *Error
	if !errors.Is(err, ErrLocked) || !errors.As(err, &e) || e.Leader == nil || e.Leader.SessionID != "s9" || e.Leader.Value != "host-z" {
		t.Fatalf("TryCampaign: %v", err)
	}
	li, err := c.Leader(ctx, "jobs/sched")
	if err != nil || li == nil || li.FencingToken != 77 {
		t.Fatalf("Leader: %+v %v", li, err)
	}
}

func TestRevokeAndSemaphoreErrors(t *testing.T) {
	st := newStub(t)
	g := &grantsStub{}
	st.setHandler(g.handler(2000))
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	ctx := context.Background()
	got, err := c.Revoke(ctx, "db/pool", RevokeSemaphore(), RevokeSession("s1"))
	if err != nil || len(got) != 1 || got[0].FencingToken != 11 {
		t.Fatalf("revoke: %v %v", got, err)
	}
	r := st.requests(isPath("POST", "/revoke"))[0]
	if r.Path != "/v1/semaphores/db%2Fpool/revoke" || r.Body["session_id"] != "s1" || r.Key == "" {
		t.Fatalf("revoke request %s %v %q", r.Path, r.Body, r.Key)
	}
	s, err := NewSession(c, WithTTLDuration(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st.setHandler(func(w http.ResponseWriter, r stubReq) {
		if strings.HasSuffix(r.Path, "/acquire") {
			reply(w, 409, map[string]interface{}{"error": map[string]interface{}{"code": "semaphore_full", "message": "full", "in_use": 3, "limit": 3}})
			return
		}
		g.handler(2000)(w, r)
	})
	err = NewSemaphore(s, "db/pool", 3).TryAcquire(ctx)
	var e *Error
	if !errors.Is(err, ErrSemaphoreFull) || !errors.As(err, &e) || e.InUse != 3 || e.Limit != 3 {
		t.Fatalf("TryAcquire: %v", err)
	}
	if err := NewSemaphore(s, "db/pool", 3, WithPermits(4)).TryAcquire(ctx); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("4 of 3 permits: %v", err)
	}
}
