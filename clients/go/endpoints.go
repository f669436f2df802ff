package raftlock

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Which API URL to try next. Any node accepts any request (followers forward to the
// leader), so calls go round-robin over the endpoints believed healthy. One that failed
// to connect, or answered 503/429, rests: for 503/429 for the server's Retry-After, after
// connection failures for an exponential backoff. When every endpoint rests, the caller
// learns how long until the first one wakes.
//
// Leader routing (README "Leader routing"): every answer names the leader its node knows
// (the X-Raftlock-Leader header). When that URL is one of the endpoints, calls go to it
// first, sparing a follower's relay; while it rests, the rotation takes over, and the next
// answer names the leader again. A hint naming any other address is ignored: requests
// (and the token) only ever go to the endpoints the program listed.

const (
	baseBackoff = 100 * time.Millisecond
	maxBackoff  = 2 * time.Second
	// maxRetryAfter clamps Retry-After: a misbehaving proxy must not park a client for hours.
	maxRetryAfter = 30 * time.Second
)

type endpointState struct {
	url       string
	notBefore time.Time
	failures  int
}

type endpointSet struct {
	mu     sync.Mutex
	states []*endpointState
	next   int
	now    func() time.Time
	// leader: the endpoint the last hint named, if it is one of ours
	leader *endpointState
}

func newEndpointSet(urls []string, now func() time.Time, startAt int) (*endpointSet, error) {
	if len(urls) == 0 {
		return nil, &Error{Code: "invalid_request", Message: "raftlock: Config.Endpoints must name at least one API URL"}
	}
	es := &endpointSet{now: now}
	for _, u := range urls {
		n, err := normalizeEndpoint(u)
		if err != nil {
			return nil, err
		}
		es.states = append(es.states, &endpointState{url: n})
	}
	if startAt < 0 {
		startAt = -startAt
	}
	es.next = startAt % len(es.states)
	return es, nil
}

func (es *endpointSet) urls() []string {
	out := make([]string, len(es.states))
	for i, s := range es.states {
		out[i] = s.url
	}
	return out
}

// noteLeader remembers an answer's leader hint when it names one of the endpoints;
// anything else (empty, malformed, another address) changes nothing.
func (es *endpointSet) noteLeader(hint string) {
	if hint == "" {
		return
	}
	u, err := normalizeEndpoint(hint)
	if err != nil {
		return
	}
	es.mu.Lock()
	defer es.mu.Unlock()
	if s := es.find(u); s != nil {
		es.leader = s
	}
}

// leaderURL is the endpoint last named as the leader, or "".
func (es *endpointSet) leaderURL() string {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.leader == nil {
		return ""
	}
	return es.leader.url
}

// pick returns, with toLeader, the known leader when it is ready (the rotation is not
// advanced); otherwise the next ready endpoint in rotation, else the one that wakes first
// and how long until then.
func (es *endpointSet) pick(toLeader bool) (string, time.Duration) {
	es.mu.Lock()
	defer es.mu.Unlock()
	t := es.now()
	if toLeader && es.leader != nil && !es.leader.notBefore.After(t) {
		return es.leader.url, 0
	}
	n := len(es.states)
	best := -1
	for i := 0; i < n; i++ {
		j := (es.next + i) % n
		s := es.states[j]
		if !s.notBefore.After(t) {
			es.next = (j + 1) % n
			return s.url, 0
		}
		if best < 0 || s.notBefore.Before(es.states[best].notBefore) {
			best = j
		}
	}
	es.next = (best + 1) % n
	return es.states[best].url, es.states[best].notBefore.Sub(t)
}

func (es *endpointSet) find(u string) *endpointState {
	for _, s := range es.states {
		if s.url == u {
			return s
		}
	}
	return nil
}

func (es *endpointSet) succeeded(u string) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if s := es.find(u); s != nil {
		s.failures = 0
		s.notBefore = time.Time{}
	}
}

// connectFailed: back off exponentially, with jitter in [0.5, 1.5).
func (es *endpointSet) connectFailed(u string, jitter float64) {
	es.mu.Lock()
	defer es.mu.Unlock()
	s := es.find(u)
	if s == nil {
		return
	}
	f := s.failures
	if f > 10 {
		f = 10
	}
	backoff := baseBackoff << uint(f)
	if backoff > maxBackoff {
		backoff = maxBackoff
	}
	s.failures++
	s.notBefore = es.now().Add(time.Duration(float64(backoff) * jitter))
}

// retryAfter: rest for the server's Retry-After, clamped to [0, maxRetryAfter].
func (es *endpointSet) retryAfter(u string, d time.Duration) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if d < 0 {
		d = 0
	}
	if d > maxRetryAfter {
		d = maxRetryAfter
	}
	if s := es.find(u); s != nil {
		s.notBefore = es.now().Add(d)
	}
}

// normalizeEndpoint: "http://h:1/" → "http://h:1"; rejects what is not an http(s) URL.
func normalizeEndpoint(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return "", &Error{Code: "invalid_request", Message: fmt.Sprintf("raftlock: endpoint %q is not a URL (expected e.g. http://127.0.0.1:7001)", raw)}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", &Error{Code: "invalid_request", Message: fmt.Sprintf("raftlock: endpoint %q must be http:// or https://", raw)}
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.Path, "/"), nil
}

// parseRetryAfter: delay-seconds or an HTTP date (RFC 9110 §10.2.3); missing or
// malformed gives fallback.
func parseRetryAfter(v string, fallback time.Duration, nowWall time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return fallback
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		d := time.Duration(n) * time.Second
		if d > maxRetryAfter {
			d = maxRetryAfter
		}
		return d
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return fallback
	}
	d := at.Sub(nowWall)
	if d < 0 {
		d = 0
	}
	if d > maxRetryAfter {
		d = maxRetryAfter
	}
	return d
}
