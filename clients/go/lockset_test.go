package raftlock

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

// setStub answers acquire-all with every name granted (or, when refuse is set, with
// that error), release-all with the names, and keepalives with the grants and a waiter
// count the test sets.
type setStub struct {
	mu      sync.Mutex
	tok     int64
	grants  []map[string]interface{}
	waiters int
	refuse  map[string]interface{}
}

func (g *setStub) handler(ttlMs int) func(w http.ResponseWriter, r stubReq) {
	return func(w http.ResponseWriter, r stubReq) {
		g.mu.Lock()
		defer g.mu.Unlock()
		switch {
		case r.Method == "POST" && r.Path == "/v1/sessions":
			reply(w, 201, map[string]interface{}{"session_id": "s1", "ttl_ms": ttlMs})
		case r.Method == "POST" && r.Path == "/v1/sessions/s1/keepalive":
			out := []map[string]interface{}{}
			for _, x := range g.grants {
				out = append(out, map[string]interface{}{"kind": "lock", "name": x["name"], "fencing_token": x["fencing_token"], "waiters": g.waiters})
			}
			reply(w, 200, map[string]interface{}{"session_id": "s1", "ttl_ms": ttlMs, "grants": out})
		case r.Method == "POST" && r.Path == "/v1/locks/acquire-all":
			if g.refuse != nil {
				reply(w, 409, g.refuse)
				return
			}
			g.grants = nil
			for _, n := range r.Body["names"].([]interface{}) {
				g.tok++
				g.grants = append(g.grants, map[string]interface{}{"name": n, "fencing_token": g.tok})
			}
			reply(w, 200, map[string]interface{}{"session_id": "s1", "ttl_ms": ttlMs, "grants": g.grants})
		case r.Method == "POST" && r.Path == "/v1/locks/release-all":
			g.grants = nil
			reply(w, 200, map[string]interface{}{"released": r.Body["names"]})
		case r.Method == "DELETE":
			reply(w, 200, map[string]interface{}{"released": []string{}})
		default:
			reply(w, 404, errBody("not_found", "no route"))
		}
	}
}

func TestLockSetGrantsEveryNameAndReleasesThemInOneRequest(t *testing.T) {
	st := newStub(t)
	g := &setStub{}
	st.setHandler(g.handler(600))
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTLDuration(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ls := NewLockSet(s, []string{"accounts/2", "accounts/1"}, WithShared(), WithMaxHold(time.Minute))
	if err := ls.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	body := st.requests(isPath("POST", "/acquire-all"))[0].Body
	if names := body["names"].([]interface{}); len(names) != 2 || names[0] != "accounts/2" || body["mode"] != "shared" || body["max_hold_ms"] != float64(60000) || body["session_id"] != "s1" {
		t.Fatalf("acquire-all body %v", body)
	}
	if !ls.Held() || ls.FencingToken("accounts/2") != 1 || ls.FencingToken("accounts/1") != 2 || len(ls.FencingTokens()) != 2 {
		t.Fatalf("tokens %v", ls.FencingTokens())
	}
	// contention: the next keepalive says someone waits
	g.mu.Lock()
	g.waiters = 2
	g.mu.Unlock()
	select {
	case c := <-ls.Contended():
		if c.Waiters != 2 || (c.Name != "accounts/1" && c.Name != "accounts/2") {
			t.Fatalf("contention %+v", c)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no contention news from the keepalives")
	}
	// the news comes with the first name of the keepalive's answer; the other name's count
	// lands right after it, in the same keepalive
	deadline := time.Now().Add(3 * time.Second)
	for ls.Waiters() != 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if ls.Waiters() != 4 {
		t.Fatalf("waiters %d", ls.Waiters())
	}
	if err := ls.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ls.Held() {
		t.Fatal("held after Unlock")
	}
	rel := st.requests(isPath("POST", "/release-all"))
	if len(rel) != 1 || len(rel[0].Body["names"].([]interface{})) != 2 {
		t.Fatalf("release-all requests %v", rel)
	}
}

func TestLockSetErrorsDeadlockAndBlocked(t *testing.T) {
	st := newStub(t)
	g := &setStub{refuse: map[string]interface{}{"error": map[string]interface{}{"code": "deadlock", "message": "m", "cycle": []map[string]interface{}{{"session_id": "s1", "name": "a"}, {"session_id": "s2", "name": "p", "kind": "semaphore"}}}}}
	st.setHandler(g.handler(600))
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTLDuration(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = NewLockSet(s, []string{"a", "b"}).Lock(context.Background())
	var e *Error
	if !errors.Is(err, ErrDeadlock) || !errors.As(err, &e) || len(e.Cycle) != 2 || e.Cycle[1] != (DeadlockStep{SessionID: "s2", Name: "p", Kind: "semaphore"}) {
		t.Fatalf("deadlock error %v %+v", err, e)
	}
	g.mu.Lock()
	g.refuse = map[string]interface{}{"error": map[string]interface{}{"code": "lock_held", "message": "m", "blocked": []map[string]interface{}{{"name": "b", "holder": map[string]interface{}{"session_id": "s9", "owner": "", "fencing_token": 4}}}}}
	g.mu.Unlock()
	err = NewLockSet(s, []string{"a", "b"}).TryLock(context.Background())
	if !errors.Is(err, ErrLocked) || !errors.As(err, &e) || len(e.Blocked) != 1 || e.Blocked[0].Name != "b" || e.Blocked[0].Holder == nil || e.Blocked[0].Holder.FencingToken != 4 {
		t.Fatalf("lock_held error %v %+v", err, e)
	}
	if len(st.requests(isPath("POST", "/release-all"))) != 0 {
		t.Fatal("a definite refusal sent a release")
	}
	if err := NewLockSet(s, []string{"a", "a"}).Lock(context.Background()); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("repeated name: %v", err)
	}
}

func TestMutexContendedFromKeepalives(t *testing.T) {
	st := newStub(t)
	g := &grantsStub{}
	var mu sync.Mutex
	waiters := 0
	base := g.handler(600)
	st.setHandler(func(w http.ResponseWriter, r stubReq) {
		if r.Method == "POST" && r.Path == "/v1/sessions/s1/keepalive" {
			g.mu.Lock()
			out := []map[string]interface{}{}
			mu.Lock()
			for _, h := range g.held {
				x := map[string]interface{}{"waiters": waiters}
				for k, v := range h {
					x[k] = v
				}
				out = append(out, x)
			}
			mu.Unlock()
			g.mu.Unlock()
			reply(w, 200, map[string]interface{}{"session_id": "s1", "ttl_ms": 600, "grants": out})
			return
		}
		base(w, r)
	})
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTLDuration(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := NewMutex(s, "hot")
	if err := m.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := len(st.requests(isPath("POST", "/keepalive")))
	eventually(t, 3*time.Second, "a keepalive", func() bool { return len(st.requests(isPath("POST", "/keepalive"))) > n })
	select {
	case <-m.Contended():
		t.Fatal("contended without waiters")
	default:
	}
	mu.Lock()
	waiters = 3
	mu.Unlock()
	select {
	case c := <-m.Contended():
		if c != (Contention{Name: "hot", Waiters: 3}) {
			t.Fatalf("contention %+v", c)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no contention news")
	}
	if m.Waiters() != 3 {
		t.Fatalf("waiters %d", m.Waiters())
	}
}
