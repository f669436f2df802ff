package raftlock

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sse writes frames and flushes them: one write per call, as the server writes one
// command's events together.
func sse(w http.ResponseWriter, frames ...string) {
	_, _ = fmt.Fprint(w, strings.Join(frames, ""))
	w.(http.Flusher).Flush()
}

func ev(name string, index uint64, data string) string {
	return fmt.Sprintf("id: %d\nevent: %s\ndata: {%s,\"index\":%d}\n\n", index, name, data, index)
}

func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
}

func next(t *testing.T, ch <-chan WatchEvent) WatchEvent {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("the feed ended")
		}
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5 s")
	}
	return WatchEvent{}
}

func TestWatchResumesOnAnotherNodeWithoutGapOrDuplicate(t *testing.T) {
	a, b := newStub(t), newStub(t)
	// A: the opening state, then the first of index 5's two events, then the stream ends
	a.setHandler(func(w http.ResponseWriter, r stubReq) {
		if !strings.HasPrefix(r.Path, "/v1/watch") {
			reply(w, 404, errBody("not_found", "x"))
			return
		}
		if r.r.URL.Query().Get("from_index") != "" {
			w.Header().Set("Retry-After", "5")
			reply(w, 503, errBody("unavailable", "down"))
			return
		}
		startSSE(w)
		sse(w, ev("state", 4, `"kind":"lock","name":"jobs/a","session_id":"s1","fencing_token":3`), "id: 4\n\n")
		sse(w, ev("released", 5, `"kind":"lock","name":"jobs/a","session_id":"s1","fencing_token":3`))
	})
	// B: resumed after 4, it re-sends index 5 whole, then 6, and stays open
	b.setHandler(func(w http.ResponseWriter, r stubReq) {
		startSSE(w)
		sse(w, ev("released", 5, `"kind":"lock","name":"jobs/a","session_id":"s1","fencing_token":3`)+ev("acquired", 5, `"kind":"lock","name":"jobs/a","session_id":"s2","fencing_token":6`))
		sse(w, ": keepalive\n\n", ev("acquired", 6, `"kind":"semaphore","name":"jobs/p","session_id":"s2","fencing_token":7,"permits":2,"limit":3`))
		<-r.r.Context().Done()
	})
	c := newTestClient(t, Config{Endpoints: []string{a.srv.URL, b.srv.URL}})
	c.eps.next = 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := c.Watch(ctx, "jobs/")
	var got []string
	for i := 0; i < 5; i++ {
		e := next(t, w.Events())
		got = append(got, fmt.Sprintf("%s %d %s %d", e.Event, e.Index, e.SessionID, e.FencingToken))
	}
	want := []string{"state 4 s1 3", "synced 4  0", "released 5 s1 3", "acquired 5 s2 6", "acquired 6 s2 7"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events\n got %q\nwant %q", got, want)
	}
	resumed := b.requests(nil)
	if len(resumed) == 0 || resumed[0].r.URL.Query().Get("from_index") != "4" || resumed[0].r.URL.Query().Get("prefix") != "jobs/" {
		t.Fatalf("resume request %+v", resumed)
	}
	cancel()
	for range w.Events() {
	}
	if !errors.Is(w.Err(), context.Canceled) {
		t.Fatalf("Err after cancel: %v", w.Err())
	}
}

func TestWatchCompactedOnEveryEndpointEnds(t *testing.T) {
	a, b := newStub(t), newStub(t)
	h := func(w http.ResponseWriter, r stubReq) {
		reply(w, 410, map[string]interface{}{"error": map[string]interface{}{"code": "compacted", "message": "gone", "compacted_index": 90}})
	}
	a.setHandler(h)
	b.setHandler(h)
	c := newTestClient(t, Config{Endpoints: []string{a.srv.URL, b.srv.URL}})
	w := c.Watch(context.Background(), "", WithFromIndex(7))
	for range w.Events() {
		t.Fatal("an event from a compacted resume point")
	}
	var e *Error
	if !errors.Is(w.Err(), ErrCompacted) || !errors.As(w.Err(), &e) || e.CompactedIndex != 90 {
		t.Fatalf("Err %v", w.Err())
	}
	if q := a.requests(nil)[0].r.URL.Query().Get("from_index"); q != "7" {
		t.Fatalf("from_index %q", q)
	}
}

func TestObserveStepsOncePerCommand(t *testing.T) {
	st := newStub(t)
	st.setHandler(func(w http.ResponseWriter, r stubReq) {
		startSSE(w)
		sse(w, ev("state", 3, `"kind":"election","name":"sched","session_id":"a","fencing_token":3,"value":"host-a"`), "id: 3\n\n")
		sse(w, ev("proclaimed", 4, `"kind":"election","name":"sched","session_id":"a","value":"host-a:2"`))
		sse(w, ev("acquired", 5, `"kind":"lock","name":"sched-other","session_id":"x","fencing_token":5`))
		sse(w, ev("resigned", 6, `"kind":"election","name":"sched","session_id":"a","fencing_token":3`)+ev("acquired", 6, `"kind":"election","name":"sched","session_id":"b","fencing_token":6,"value":"host-b"`))
		sse(w, ev("resigned", 7, `"kind":"election","name":"sched","session_id":"b","fencing_token":6`))
		<-r.r.Context().Done()
	})
	c := newTestClient(t, Config{Endpoints: []string{st.srv.URL}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := c.Observe(ctx, "sched")
	var got []string
	for i := 0; i < 4; i++ {
		select {
		case l := <-o.Leaders():
			if l == nil {
				got = append(got, "none")
			} else {
				got = append(got, fmt.Sprintf("%s %d %s", l.SessionID, l.FencingToken, l.Value))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("only %q", got)
		}
	}
	want := []string{"a 3 host-a", "a 3 host-a:2", "b 6 host-b", "none"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("leaders\n got %q\nwant %q", got, want)
	}
	if q := st.requests(nil)[0].r.URL.Query().Get("prefix"); q != "sched" {
		t.Fatalf("prefix %q", q)
	}
}

func TestParseFrame(t *testing.T) {
	if _, _, ok, err := parseFrame([]string{": keepalive"}); ok || err != nil {
		t.Fatal("a comment is no frame")
	}
	if e, marker, ok, _ := parseFrame([]string{"id: 12"}); !ok || !marker || e.Index != 12 || e.Event != "synced" {
		t.Fatalf("marker %+v", e)
	}
	if _, _, _, err := parseFrame([]string{"event: acquired", "data: nope"}); err == nil {
		t.Fatal("bad data accepted")
	}
	if _, _, _, err := parseFrame([]string{"event: acquired", `data: {"name":"x"}`}); err == nil {
		t.Fatal("data without kind/index accepted")
	}
}
