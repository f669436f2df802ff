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

// Acquires and releases of one name at once, in one session (docs/client.md "Acquires and
// releases of one name at once"). sharedStub answers as the cluster does for one session:
// a second acquire of a name the session holds returns the same grant, a release by token
// ends that grant, a semaphore's release ends the session's grant of the name. Gates let a
// test hold an acquire's answer after the acquire took effect, or a release before it does.
type sharedStub struct {
	mu      sync.Mutex
	held    map[string]int64 // "lock/NAME" or "semaphore/NAME" → the session's grant
	tok     int64
	acqGate *gate // when set, an acquire's answer waits for it (the acquire took effect)
	relGate *gate // when set, a release waits for it before it takes effect
	acqs    int   // acquires that took effect
	rels    int   // releases that arrived
}

func (g *sharedStub) handler(w http.ResponseWriter, r stubReq) {
	const ttlMs = 60000
	acquire := func(space, name string, extra map[string]interface{}) {
		g.mu.Lock()
		k := space + "/" + name
		tok := g.held[k]
		if tok == 0 {
			g.tok++
			tok = g.tok
			g.held[k] = tok
		}
		g.acqs++
		hold := g.acqGate
		g.mu.Unlock()
		if hold != nil {
			<-hold.ch
		}
		out := map[string]interface{}{"name": name, "session_id": "s1", "fencing_token": tok, "ttl_ms": ttlMs}
		for k, v := range extra {
			out[k] = v
		}
		reply(w, 200, out)
	}
	release := func(space, name string, token int64) {
		g.mu.Lock()
		g.rels++
		hold := g.relGate
		g.mu.Unlock()
		if hold != nil {
			<-hold.ch
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		k := space + "/" + name
		if g.held[k] == 0 || (token != 0 && g.held[k] != token) {
			reply(w, 409, errBody("not_holder", "not held"))
			return
		}
		delete(g.held, k)
		reply(w, 200, map[string]interface{}{"name": name, "released": true})
	}
	trim := func(prefix, suffix string) string {
		return strings.TrimSuffix(strings.TrimPrefix(r.Path, prefix), suffix)
	}
	switch {
	case r.Method == "POST" && r.Path == "/v1/sessions":
		reply(w, 201, map[string]interface{}{"session_id": "s1", "ttl_ms": ttlMs})
	case strings.HasSuffix(r.Path, "/keepalive"):
		reply(w, 200, map[string]interface{}{"session_id": "s1", "ttl_ms": ttlMs, "grants": g.listed()})
	case r.Method == "DELETE":
		reply(w, 200, map[string]interface{}{"released": []string{}})
	case strings.HasPrefix(r.Path, "/v1/locks/") && strings.HasSuffix(r.Path, "/acquire"):
		acquire("lock", trim("/v1/locks/", "/acquire"), nil)
	case strings.HasPrefix(r.Path, "/v1/semaphores/") && strings.HasSuffix(r.Path, "/acquire"):
		acquire("semaphore", trim("/v1/semaphores/", "/acquire"), map[string]interface{}{"permits": r.Body["permits"], "limit": r.Body["limit"]})
	case strings.HasPrefix(r.Path, "/v1/locks/") && strings.HasSuffix(r.Path, "/release"):
		tok, _ := r.Body["fencing_token"].(float64)
		release("lock", trim("/v1/locks/", "/release"), int64(tok))
	case strings.HasPrefix(r.Path, "/v1/semaphores/") && strings.HasSuffix(r.Path, "/release"):
		release("semaphore", trim("/v1/semaphores/", "/release"), 0)
	default:
		reply(w, 404, errBody("not_found", "no route"))
	}
}

func (g *sharedStub) listed() []map[string]interface{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []map[string]interface{}
	for k, tok := range g.held {
		space, name, _ := strings.Cut(k, "/")
		out = append(out, map[string]interface{}{"kind": space, "name": name, "fencing_token": tok})
	}
	return out
}

// grant is the session's grant of name in space at the stub (0: none).
func (g *sharedStub) grant(space, name string) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held[space+"/"+name]
}

func (g *sharedStub) set(f func(g *sharedStub)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(g)
}

func (g *sharedStub) count(f func(g *sharedStub) int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return f(g)
}

func newSharedSession(t *testing.T) (*sharedStub, *Session) {
	t.Helper()
	st := newStub(t)
	g := &sharedStub{held: map[string]int64{}}
	st.setHandler(g.handler)
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	s, err := NewSession(c, WithTTLDuration(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return g, s
}

func TestAReleaseEndsEveryMutexThatCarriesItsGrant(t *testing.T) {
	_, s := newSharedSession(t)
	ctx := context.Background()
	first, second := NewMutex(s, "shared"), NewMutex(s, "shared")
	if err := first.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := second.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if first.FencingToken() != second.FencingToken() {
		t.Fatalf("tokens %d and %d: the second acquire should return the session's grant", first.FencingToken(), second.FencingToken())
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if second.Held() {
		t.Fatal("the other mutex still claims the grant its session released")
	}
	if !errors.Is(second.Err(), ErrLockLost) {
		t.Fatalf("Err() = %v, want ErrLockLost", second.Err())
	}
}

// overtaken runs take (an acquire that reaches the stub and takes effect, but whose answer
// waits) and then give (a release of the same grant, answered at once), then lets the
// acquire's answer go.
func overtaken(t *testing.T, g *sharedStub, take func() error, give func() error) {
	t.Helper()
	hold := newGate(t)
	g.set(func(g *sharedStub) { g.acqGate = hold })
	before := g.count(func(g *sharedStub) int { return g.acqs })
	took := make(chan error, 1)
	go func() { took <- take() }()
	eventually(t, 3*time.Second, "the acquire took effect at the stub", func() bool {
		return g.count(func(g *sharedStub) int { return g.acqs }) > before
	})
	g.set(func(g *sharedStub) { g.acqGate = nil })
	if err := give(); err != nil {
		t.Fatalf("release: %v", err)
	}
	hold.open()
	if err := <-took; err != nil {
		t.Fatalf("acquire: %v", err)
	}
}

func TestAMutexAnsweredWhileAReleaseWasOutAsksAgain(t *testing.T) {
	g, s := newSharedSession(t)
	ctx := context.Background()
	first, second := NewMutex(s, "overtaken"), NewMutex(s, "overtaken")
	if err := first.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	overtaken(t, g, func() error { return second.Lock(ctx) }, func() error { return first.Unlock(ctx) })
	if !second.Held() {
		t.Fatalf("not held: %v", second.Err())
	}
	if second.FencingToken() == first.FencingToken() {
		t.Fatalf("the mutex took token %d, the grant its session's release ended", second.FencingToken())
	}
	if at := g.grant("lock", "overtaken"); at != second.FencingToken() {
		t.Fatalf("the cluster holds token %d for the session, the mutex claims %d", at, second.FencingToken())
	}
}

func TestASemaphoreAnsweredWhileAReleaseWasOutAsksAgain(t *testing.T) {
	g, s := newSharedSession(t)
	ctx := context.Background()
	first, second := NewSemaphore(s, "pool", 1), NewSemaphore(s, "pool", 1)
	if err := first.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	overtaken(t, g, func() error { return second.Acquire(ctx) }, func() error { return first.Release(ctx) })
	if !second.Held() {
		t.Fatalf("not held: %v", second.Err())
	}
	if at := g.grant("semaphore", "pool"); at == 0 || at != second.FencingToken() {
		t.Fatalf("the cluster holds token %d for the session, the semaphore claims %d", at, second.FencingToken())
	}
}

func TestAnAcquireWaitsForAReleaseOfItsNameInFlight(t *testing.T) {
	g, s := newSharedSession(t)
	ctx := context.Background()
	first, second := NewMutex(s, "queue"), NewMutex(s, "queue")
	if err := first.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	hold := newGate(t)
	g.set(func(g *sharedStub) { g.relGate = hold })
	unlocked := make(chan error, 1)
	go func() { unlocked <- first.Unlock(ctx) }()
	eventually(t, 3*time.Second, "the release at the stub", func() bool { return g.count(func(g *sharedStub) int { return g.rels }) == 1 })
	locked := make(chan error, 1)
	acqs := g.count(func(g *sharedStub) int { return g.acqs })
	go func() { locked <- second.Lock(ctx) }()
	// the release is still out: the acquire must not have gone out (it would be answered the
	// grant the release is about to end)
	eventually(t, 3*time.Second, "the acquire registered", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.asks[nameKey{"lock", "queue"}]) == 1
	})
	if n := g.count(func(g *sharedStub) int { return g.acqs }); n != acqs {
		t.Fatal("the acquire went out while a release of its name was in flight")
	}
	g.set(func(g *sharedStub) { g.relGate = nil })
	hold.open()
	if err := <-unlocked; err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if !second.Held() || second.FencingToken() <= first.FencingToken() || g.grant("lock", "queue") != second.FencingToken() {
		t.Fatalf("held %v, token %d (first %d, cluster %d)", second.Held(), second.FencingToken(), first.FencingToken(), g.grant("lock", "queue"))
	}
}
