package raftlock

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// Leader routing (README "Leader routing"): calls go to the leader the answers name when
// it is one of the endpoints, fall back to the rotation when it rests, and keep every
// retry rule (one Idempotency-Key per change across the failover).

func TestEndpointSetPrefersTheLeaderHintWhileItIsReady(t *testing.T) {
	now := time.Unix(0, 0)
	es, err := newEndpointSet([]string{"http://a:1", "http://b:1", "http://c:1"}, func() time.Time { return now }, 0)
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := es.pick(true); u != "http://a:1" {
		t.Fatalf("no hint yet: the rotation, got %s", u)
	}
	es.noteLeader("http://c:1/")
	if es.leaderURL() != "http://c:1" {
		t.Fatalf("leader %q", es.leaderURL())
	}
	for i := 0; i < 2; i++ {
		if u, _ := es.pick(true); u != "http://c:1" {
			t.Fatalf("pick %d: %s, want the leader", i, u)
		}
	}
	if u, _ := es.pick(false); u != "http://b:1" {
		t.Fatalf("calls for any node keep rotating (leader picks do not advance it): %s", u)
	}
	for _, h := range []string{"http://evil:1", "not a url", "", "ftp://x:1"} {
		es.noteLeader(h)
		if es.leaderURL() != "http://c:1" {
			t.Fatalf("hint %q changed the leader to %q", h, es.leaderURL())
		}
	}
	es.retryAfter("http://c:1", time.Second)
	if u, rest := es.pick(true); u == "http://c:1" || rest != 0 {
		t.Fatalf("a resting leader is not waited for: %s %v", u, rest)
	}
	now = now.Add(time.Second)
	if u, _ := es.pick(true); u != "http://c:1" {
		t.Fatalf("the leader again once ready: %s", u)
	}
}

// three stubs whose answers name leader() (the default handler's answers otherwise)
func routedStubs(t *testing.T, leader func() string, handle func(i int, w http.ResponseWriter, r stubReq) bool) []*stub {
	sts := []*stub{newStub(t), newStub(t), newStub(t)}
	for i, st := range sts {
		i := i
		def := defaultHandler(60000)
		st.setHandler(func(w http.ResponseWriter, r stubReq) {
			w.Header().Set("X-Raftlock-Leader", leader())
			if handle != nil && handle(i, w, r) {
				return
			}
			def(w, r)
		})
	}
	return sts
}

// hitsOf: which stub answered each request, in order (by arrival time)
func hitsOf(sts []*stub) []int {
	type hit struct {
		i  int
		at time.Time
	}
	var all []hit
	for i, st := range sts {
		for _, r := range st.requests(nil) {
			all = append(all, hit{i, r.At})
		}
	}
	for a := 1; a < len(all); a++ {
		for b := a; b > 0 && all[b].at.Before(all[b-1].at); b-- {
			all[b], all[b-1] = all[b-1], all[b]
		}
	}
	out := make([]int, len(all))
	for k, h := range all {
		out[k] = h.i
	}
	return out
}

func urlsOf(sts []*stub) []string {
	out := make([]string, len(sts))
	for i, st := range sts {
		out[i] = st.srv.URL
	}
	return out
}

func TestCallsGoToTheLeaderTheAnswersName(t *testing.T) {
	var sts []*stub
	sts = routedStubs(t, func() string { return sts[1].srv.URL }, nil)
	c := newTestClient(t, Config{Endpoints: urlsOf(sts)})
	for i := 0; i < 5; i++ {
		if _, _, err := c.openSession(context.Background(), 0, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	hits := hitsOf(sts)
	for k, i := range hits[1:] {
		if i != 1 {
			t.Fatalf("call %d went to stub %d, not the leader: %v", k+2, i, hits)
		}
	}
}

func TestLeaderRoutingOffRotates(t *testing.T) {
	for _, how := range []string{"config", "env"} {
		var sts []*stub
		sts = routedStubs(t, func() string { return sts[1].srv.URL }, nil)
		cfg := Config{Endpoints: urlsOf(sts)}
		if how == "config" {
			cfg.DisableLeaderRouting = true
		} else {
			t.Setenv("RAFTLOCK_LEADER_ROUTING", "off")
		}
		c := newTestClient(t, cfg)
		for i := 0; i < 6; i++ {
			if _, _, err := c.openSession(context.Background(), 0, "", 0); err != nil {
				t.Fatal(err)
			}
		}
		hits := hitsOf(sts)
		for k := 1; k < len(hits); k++ {
			if hits[k] == hits[k-1] {
				t.Fatalf("%s: consecutive calls to the same stub: %v", how, hits)
			}
		}
	}
	t.Setenv("RAFTLOCK_LEADER_ROUTING", "maybe")
	if _, err := New(Config{Endpoints: []string{"http://a:1"}}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("a bad RAFTLOCK_LEADER_ROUTING: want ErrInvalidRequest, got %v", err)
	}
}

func TestAHintNamingAnotherAddressIsNeverContacted(t *testing.T) {
	outsider := newStub(t)
	var sts []*stub
	sts = routedStubs(t, func() string { return outsider.srv.URL }, nil)
	c := newTestClient(t, Config{Endpoints: urlsOf(sts)})
	for i := 0; i < 3; i++ {
		if _, _, err := c.openSession(context.Background(), 0, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(outsider.requests(nil)); n != 0 {
		t.Fatalf("the outsider was asked %d times", n)
	}
}

func TestALeaderFailureFallsBackWithTheSameKeyAndFollowsTheNextLeader(t *testing.T) {
	var sts []*stub
	var leader, failing int32 = 1, 0
	sts = routedStubs(t, func() string { return sts[atomic.LoadInt32(&leader)].srv.URL }, func(i int, w http.ResponseWriter, r stubReq) bool {
		if atomic.LoadInt32(&failing) == 1 && i == 1 {
			// the old leader's answer: outcome unknown, naming the new leader
			atomic.StoreInt32(&leader, 2)
			w.Header().Set("X-Raftlock-Leader", sts[2].srv.URL)
			reply(w, 504, errBody("timeout", "unknown"))
			return true
		}
		return false
	})
	c := newTestClient(t, Config{Endpoints: urlsOf(sts)})
	if _, _, err := c.openSession(context.Background(), 0, "", 0); err != nil {
		t.Fatal(err)
	}
	atomic.StoreInt32(&failing, 1)
	before := len(hitsOf(sts))
	if _, _, err := c.openSession(context.Background(), 0, "", 0); err != nil {
		t.Fatal(err)
	}
	hits := hitsOf(sts)[before:]
	if len(hits) != 2 || hits[0] != 1 || hits[1] != 2 {
		t.Fatalf("want the leader, then the leader its failed answer named: %v", hits)
	}
	old, next := sts[1].requests(nil), sts[2].requests(nil)
	if old[len(old)-1].Key == "" || old[len(old)-1].Key != next[len(next)-1].Key {
		t.Fatalf("one Idempotency-Key across the failover: %q then %q", old[len(old)-1].Key, next[len(next)-1].Key)
	}
}
