package raftlock

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// lateStub answers like a cluster that applies copies of given-up acquires late: an
// acquire of a name in giveUp gets an answer without a token (the client cannot use it,
// so it gives up and cleans up), other acquires are granted; listed is what the keepalive
// answers list, and the test adds the grant a late copy makes to it. A release by token
// (or of a semaphore, by name) takes the grant off the list.
type lateStub struct {
	mu       sync.Mutex
	giveUp   map[string]bool
	listed   []map[string]interface{}
	tok      int64
	hold     chan struct{} // when set, acquires wait for it to close
	relHold  chan struct{} // when set, releases by token wait for it to close
	relHeld  int           // releases that waited for relHold
	relError bool          // releases by token are refused (permission_denied)
	warnings []string
}

func (g *lateStub) list(kind, name string, token int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listed = append(g.listed, map[string]interface{}{"kind": kind, "name": name, "fencing_token": token})
}

func (g *lateStub) unlist(kind, name string, token int64) {
	out := g.listed[:0]
	for _, h := range g.listed {
		if h["kind"] == kind && h["name"] == name && (token == 0 || h["fencing_token"] == token) {
			continue
		}
		out = append(out, h)
	}
	g.listed = out
}

func (g *lateStub) set(f func(g *lateStub)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(g)
}

func (g *lateStub) warn(msg string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.warnings = append(g.warnings, fmt.Sprintf("%s: %v", msg, err))
}

func (g *lateStub) warned(part string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range g.warnings {
		if strings.Contains(w, part) {
			return true
		}
	}
	return false
}

func (g *lateStub) handler(w http.ResponseWriter, r stubReq) {
	const ttlMs = 600
	name := func(prefix, suffix string) string {
		return strings.TrimSuffix(strings.TrimPrefix(r.Path, prefix), suffix)
	}
	acquire := func(kind, n string, extra map[string]interface{}) {
		g.mu.Lock()
		hold := g.hold
		g.mu.Unlock()
		if hold != nil {
			<-hold
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.giveUp[n] {
			reply(w, 200, map[string]interface{}{"session_id": "s1"}) // no token: bad_response
			return
		}
		g.tok++
		g.listed = append(g.listed, map[string]interface{}{"kind": kind, "name": n, "fencing_token": g.tok})
		out := map[string]interface{}{"name": n, "session_id": "s1", "fencing_token": g.tok, "ttl_ms": ttlMs}
		for k, v := range extra {
			out[k] = v
		}
		reply(w, 200, out)
	}
	switch {
	case r.Method == "POST" && r.Path == "/v1/sessions":
		reply(w, 201, map[string]interface{}{"session_id": "s1", "ttl_ms": ttlMs})
	case strings.HasSuffix(r.Path, "/keepalive"):
		g.mu.Lock()
		listed := append([]map[string]interface{}{}, g.listed...)
		g.mu.Unlock()
		reply(w, 200, map[string]interface{}{"session_id": "s1", "ttl_ms": ttlMs, "grants": listed})
	case r.Method == "DELETE":
		reply(w, 200, map[string]interface{}{"released": []string{}})
	case r.Path == "/v1/locks/acquire-all":
		g.mu.Lock()
		giveUp := false
		for _, n := range r.Body["names"].([]interface{}) {
			giveUp = giveUp || g.giveUp[n.(string)]
		}
		g.mu.Unlock()
		if giveUp {
			reply(w, 200, map[string]interface{}{"session_id": "s1", "grants": []interface{}{}}) // grants that do not match
			return
		}
		reply(w, 500, errBody("internal", "this stub grants no sets"))
	case r.Path == "/v1/locks/release-all":
		reply(w, 200, map[string]interface{}{"released": r.Body["names"]})
	case strings.HasPrefix(r.Path, "/v1/locks/") && strings.HasSuffix(r.Path, "/acquire"):
		acquire("lock", name("/v1/locks/", "/acquire"), nil)
	case strings.HasPrefix(r.Path, "/v1/semaphores/") && strings.HasSuffix(r.Path, "/acquire"):
		acquire("semaphore", name("/v1/semaphores/", "/acquire"), map[string]interface{}{"permits": r.Body["permits"], "limit": r.Body["limit"]})
	case strings.HasSuffix(r.Path, "/campaign"):
		acquire("election", name("/v1/elections/", "/campaign"), map[string]interface{}{"value": r.Body["value"]})
	case strings.HasPrefix(r.Path, "/v1/locks/") && strings.HasSuffix(r.Path, "/release"):
		n := name("/v1/locks/", "/release")
		tok, byToken := r.Body["fencing_token"].(float64)
		if byToken {
			g.mu.Lock()
			hold, refuse := g.relHold, g.relError
			if hold != nil {
				g.relHeld++
			}
			g.mu.Unlock()
			if hold != nil {
				<-hold
			}
			if refuse {
				reply(w, 403, errBody("permission_denied", "not today"))
				return
			}
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		g.unlist("lock", n, int64(tok))
		g.unlist("election", n, int64(tok))
		reply(w, 200, map[string]interface{}{"name": n, "released": true})
	case strings.HasPrefix(r.Path, "/v1/semaphores/") && strings.HasSuffix(r.Path, "/release"):
		g.mu.Lock()
		defer g.mu.Unlock()
		g.unlist("semaphore", name("/v1/semaphores/", "/release"), 0)
		reply(w, 200, map[string]interface{}{"name": "x", "released": true})
	default:
		reply(w, 404, errBody("not_found", "no route"))
	}
}

// gate is a channel the stub's handlers wait on; open closes it, at the latest when the
// test ends (a test that failed early must not leave requests for the server's Close to
// wait on).
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{ch: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// newLateSession opens a session (keepalives every ~200 ms) on a lateStub that gives up
// on the names giveUp.
func newLateSession(t *testing.T, giveUp ...string) (*stub, *lateStub, *Session) {
	t.Helper()
	st := newStub(t)
	g := &lateStub{giveUp: map[string]bool{}}
	for _, n := range giveUp {
		g.giveUp[n] = true
	}
	st.setHandler(g.handler)
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}, OnWarning: g.warn})
	s, err := NewSession(c, WithTTLDuration(600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return st, g, s
}

// releasesOf are the releases of lock name sent with a fencing token (the sweep's).
func releasesOf(st *stub, name string) []stubReq {
	return st.requests(func(r stubReq) bool {
		_, byToken := r.Body["fencing_token"]
		return r.Method == "POST" && r.Path == "/v1/locks/"+name+"/release" && byToken
	})
}

// keepalives waits until n more keepalives were answered.
func keepalives(t *testing.T, st *stub, n int) {
	t.Helper()
	from := len(st.requests(isPath("POST", "/keepalive")))
	eventually(t, 3*time.Second, fmt.Sprintf("%d keepalives", n), func() bool {
		return len(st.requests(isPath("POST", "/keepalive"))) >= from+n+1 // the last one answered
	})
}

func TestSweepReleasesALateGrantOfANameGivenUpOn(t *testing.T) {
	st, g, s := newLateSession(t, "report")
	if err := NewMutex(s, "report").TryLock(context.Background()); err == nil {
		t.Fatal("an answer without a token was taken")
	}
	if rel := st.requests(isPath("POST", "/v1/locks/report/release")); len(rel) != 1 || rel[0].Body["fencing_token"] != nil {
		t.Fatalf("want one cleanup release without a token, got %+v", rel)
	}
	g.list("lock", "report", 42) // a late copy of the acquire is applied after the cleanup
	eventually(t, 3*time.Second, "the sweep's release", func() bool { return len(releasesOf(st, "report")) > 0 })
	rel := releasesOf(st, "report")[0]
	if rel.Body["fencing_token"] != float64(42) || rel.Body["session_id"] != "s1" {
		t.Fatalf("sweep release %+v", rel.Body)
	}
	eventually(t, time.Second, "the sweep's warning", func() bool { return g.warned("released lock report (token 42) in session s1") })
	keepalives(t, st, 3) // the list no longer has it: nothing more is sent
	if n := len(st.requests(isPath("POST", "/release"))); n != 2 {
		t.Fatalf("%d releases; want the cleanup and one sweep release", n)
	}
}

func TestSweepLeavesAGrantALockObjectHoldsOrAnAcquireInFlightMayGet(t *testing.T) {
	st, g, s := newLateSession(t, "report")
	ctx := context.Background()
	if err := NewMutex(s, "report").TryLock(ctx); err == nil {
		t.Fatal("an answer without a token was taken")
	}
	// a new acquire of the name is in flight when the late copy's grant is listed
	hold := newGate(t)
	g.set(func(g *lateStub) { g.giveUp["report"] = false; g.hold = hold.ch })
	m := NewMutex(s, "report")
	locked := make(chan error, 1)
	go func() { locked <- m.Lock(ctx) }()
	eventually(t, 3*time.Second, "the second acquire", func() bool { return len(st.requests(isPath("POST", "/report/acquire"))) == 2 })
	g.list("lock", "report", 42)
	keepalives(t, st, 3)
	if rel := releasesOf(st, "report"); len(rel) != 0 {
		t.Fatalf("released while an acquire of the name was in flight: %+v", rel)
	}
	// the acquire is answered the grant the session holds (as a server does), and the
	// mutex holds token 42 from now on
	g.set(func(g *lateStub) { g.hold = nil; g.unlist("lock", "report", 42); g.tok = 41 })
	hold.open()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if m.FencingToken() != 42 {
		t.Fatalf("token %d", m.FencingToken())
	}
	keepalives(t, st, 3)
	if rel := releasesOf(st, "report"); len(rel) != 0 || !m.Held() {
		t.Fatalf("released a grant the mutex holds: %+v", rel)
	}
}

func TestSweepLeavesNamesNeverGivenUpOn(t *testing.T) {
	st, g, s := newLateSession(t, "other")
	if err := NewMutex(s, "other").TryLock(context.Background()); err == nil {
		t.Fatal("an answer without a token was taken")
	}
	// grants the caller took with the one-shot calls in this session
	g.list("lock", "mine", 7)
	g.list("semaphore", "pool", 8)
	keepalives(t, st, 3)
	if rel := st.requests(func(r stubReq) bool {
		return strings.HasSuffix(r.Path, "/release") && !strings.HasPrefix(r.Path, "/v1/locks/other/")
	}); len(rel) != 0 {
		t.Fatalf("released grants of names never given up on: %+v", rel)
	}
}

func TestSweepReleasesALateSemaphoreGrantByName(t *testing.T) {
	st, g, s := newLateSession(t, "pool")
	ctx := context.Background()
	if err := NewSemaphore(s, "pool", 3).TryAcquire(ctx); err == nil {
		t.Fatal("an answer without a token was taken")
	}
	if n := len(st.requests(isPath("POST", "/v1/semaphores/pool/release"))); n != 1 {
		t.Fatalf("%d cleanup releases", n)
	}
	g.list("semaphore", "pool", 42)
	eventually(t, 3*time.Second, "the sweep's release", func() bool {
		return len(st.requests(isPath("POST", "/v1/semaphores/pool/release"))) == 2
	})
	rel := st.requests(isPath("POST", "/v1/semaphores/pool/release"))[1]
	if _, byToken := rel.Body["fencing_token"]; byToken || rel.Body["session_id"] != "s1" {
		t.Fatalf("sweep release %+v", rel.Body)
	}
	eventually(t, time.Second, "the sweep's warning", func() bool { return g.warned("released semaphore pool (token 42)") })
	// a Semaphore of the name holds a grant: no listed grant of the name is released
	g.set(func(g *lateStub) { g.giveUp["pool"] = false })
	sem := NewSemaphore(s, "pool", 3)
	if err := sem.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	g.list("semaphore", "pool", 42)
	keepalives(t, st, 3)
	if n := len(st.requests(isPath("POST", "/v1/semaphores/pool/release"))); n != 2 || !sem.Held() {
		t.Fatalf("%d releases while a Semaphore holds the name", n)
	}
}

func TestSweepCoversLockSetsAndElections(t *testing.T) {
	st, g, s := newLateSession(t, "a", "b", "e")
	ctx := context.Background()
	if err := NewLockSet(s, []string{"a", "b"}).TryLock(ctx); err == nil {
		t.Fatal("grants that do not match were taken")
	}
	if _, err := NewElection(s, "e").TryCampaign(ctx, "v"); err == nil {
		t.Fatal("an answer without a token was taken")
	}
	g.list("lock", "a", 41)
	g.list("lock", "b", 42)
	g.list("election", "e", 43)
	for n, tok := range map[string]float64{"a": 41, "b": 42, "e": 43} {
		n, tok := n, tok
		eventually(t, 3*time.Second, "the sweep's release of "+n, func() bool {
			rel := releasesOf(st, n)
			return len(rel) == 1 && rel[0].Body["fencing_token"] == tok
		})
	}
}

func TestSweepReleaseThatFailsIsRetriedAndNewAcquiresWaitForIt(t *testing.T) {
	st, g, s := newLateSession(t, "report")
	ctx := context.Background()
	if err := NewMutex(s, "report").TryLock(ctx); err == nil {
		t.Fatal("an answer without a token was taken")
	}
	g.set(func(g *lateStub) { g.relError = true })
	g.list("lock", "report", 42)
	eventually(t, 3*time.Second, "a refused sweep release", func() bool { return g.warned("could not release lock report (token 42)") })
	// the next one is held up at the server: an acquire of the name waits for it
	hold := newGate(t)
	g.set(func(g *lateStub) { g.relError = false; g.relHold = hold.ch; g.giveUp["report"] = false })
	eventually(t, 3*time.Second, "the sweep's release again", func() bool {
		held := 0
		g.set(func(g *lateStub) { held = g.relHeld })
		return held > 0
	})
	m := NewMutex(s, "report")
	locked := make(chan error, 1)
	go func() { locked <- m.Lock(ctx) }()
	time.Sleep(300 * time.Millisecond) // a window for the acquire to be sent, were it not waiting
	if a := st.requests(isPath("POST", "/report/acquire")); len(a) != 1 {
		t.Fatalf("an acquire was sent while a release of the name was in flight: %d acquires", len(a))
	}
	hold.open()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	if !m.Held() || len(st.requests(isPath("POST", "/report/acquire"))) != 2 {
		t.Fatal("the acquire after the release did not take the lock")
	}
}

func TestWatchedNamesExpireAfterTenMinutesAndAreBounded(t *testing.T) {
	s := &Session{id: "s1"}
	t0 := time.Now()
	watch := func(name string, at time.Time) {
		s.mu.Lock()
		s.watchLocked(nameKey{"lock", name}, at)
		s.mu.Unlock()
	}
	late := func(at time.Time, names ...string) []string {
		var grants []keepaliveGrant
		for i, n := range names {
			grants = append(grants, keepaliveGrant{Kind: "lock", Name: n, FencingToken: int64(i + 1)})
		}
		var out []string
		for _, g := range s.lateGrants(grants, at) {
			out = append(out, g.name)
			g.done()
		}
		return out
	}
	watch("a", t0)
	watch("b", t0)
	watch("b", t0.Add(5*time.Minute)) // re-watching extends
	if got := late(t0.Add(10*time.Minute-time.Second), "a", "b"); len(got) != 2 {
		t.Fatalf("within ten minutes: %v", got)
	}
	if got := late(t0.Add(10*time.Minute), "a", "b"); len(got) != 1 || got[0] != "b" {
		t.Fatalf("ten minutes after watching a, and five after re-watching b: %v", got)
	}
	if _, ok := s.watched[nameKey{"lock", "a"}]; ok {
		t.Fatal("an expired watch was kept")
	}
	if got := late(t0.Add(15 * time.Minute)); len(got) != 0 || len(s.watched) != 0 {
		t.Fatalf("%v released, %d still watched", got, len(s.watched))
	}
	// at most maxWatched names: the earliest deadline goes first
	for i := 0; i <= maxWatched; i++ {
		watch(fmt.Sprint("n", i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	if _, ok := s.watched[nameKey{"lock", "n0"}]; ok || len(s.watched) != maxWatched {
		t.Fatalf("%d watched, n0 kept: %v", len(s.watched), ok)
	}
}

func TestSweepLeavesAGrantItsMutexIsReleasing(t *testing.T) {
	st, g, s := newLateSession(t, "report")
	ctx := context.Background()
	if err := NewMutex(s, "report").TryLock(ctx); err == nil {
		t.Fatal("an answer without a token was taken")
	}
	g.set(func(g *lateStub) { g.giveUp["report"] = false })
	m := NewMutex(s, "report")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// the mutex's own release waits at the server: its grant stays listed meanwhile
	hold := newGate(t)
	g.set(func(g *lateStub) { g.relHold = hold.ch })
	unlocked := make(chan error, 1)
	go func() { unlocked <- m.Unlock(ctx) }()
	eventually(t, 3*time.Second, "the mutex's release at the server", func() bool { return len(releasesOf(st, "report")) == 1 })
	keepalives(t, st, 3)
	if rel := releasesOf(st, "report"); len(rel) != 1 {
		t.Fatalf("the sweep released a grant its mutex was giving back: %+v", rel)
	}
	g.set(func(g *lateStub) { g.relHold = nil })
	hold.open()
	if err := <-unlocked; err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}
