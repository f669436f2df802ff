package raftlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// LockSet is several lock names taken together in one session (docs/contract.md §5 "Lock
// sets"): Lock grants every name in one step, or makes the set wait as ONE request with one
// place in the FIFO queue of each name, so two sets over the same names — in any order —
// never wait for each other, and no set is ever held in part. Each name has its own
// fencing token (FencingToken(name)); Held() is false as soon as ANY of them can no longer
// be proven held.
type LockSet struct {
	s       *Session
	names   []string
	owner   string
	shared  bool
	maxHold time.Duration

	mu        sync.Mutex
	tokens    map[string]int64
	held      bool
	holdUntil time.Time
	refs      []*grantRef
	lostErr   error
	cont      *contention
}

// NewLockSet returns a lock set of names (1–64 distinct names) in session s; the options
// are the mutex's (WithMutexOwner, WithShared, WithMaxHold). Nothing is sent yet.
func NewLockSet(s *Session, names []string, opts ...MutexOption) *LockSet {
	var m Mutex
	for _, f := range opts {
		f(&m)
	}
	return &LockSet{s: s, names: append([]string(nil), names...), owner: m.owner, shared: m.shared, maxHold: m.maxHold, cont: newContention()}
}

// Names are the set's lock names, in the order given.
func (l *LockSet) Names() []string { return append([]string(nil), l.names...) }

// FencingToken is the token of name's grant (0 before the first Lock, or for a name not in the set).
func (l *LockSet) FencingToken(name string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tokens[name]
}

// FencingTokens is name → token of every name (nil before the first Lock).
func (l *LockSet) FencingTokens() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tokens == nil {
		return nil
	}
	out := make(map[string]int64, len(l.tokens))
	for k, v := range l.tokens {
		out[k] = v
	}
	return out
}

// Held reports whether every lock of the set is held and the session's lease proven right
// now: none released, revoked or past its max hold. Check it right before an action.
func (l *LockSet) Held() bool {
	l.mu.Lock()
	held := l.held && l.lostErr == nil && (l.holdUntil.IsZero() || time.Now().Before(l.holdUntil))
	l.mu.Unlock()
	return held && l.s.isProven()
}

// Err is why a lock of the set was lost while its session lives on (errors.Is ErrLockLost).
func (l *LockSet) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

// Waiters is how many requests waited on the set's names at the last keepalive, in all.
func (l *LockSet) Waiters() int { return l.cont.total() }

// Contended receives a Contention (which name, how many wait) when a keepalive finds
// requests waiting on one of the set's names where the one before found none.
func (l *LockSet) Contended() <-chan Contention { return l.cont.ch }

// Lock waits until every name is granted together, ctx is done or the session is lost.
// ErrDeadlock (Error.Cycle) when waiting would close a cycle of waiting sessions — which two
// sets never do between themselves, only a set and locks held and waited for one by one.
func (l *LockSet) Lock(ctx context.Context) error { return l.lock(ctx, true) }

// TryLock takes every name if each is free now; ErrLocked (Error.Blocked names what stood
// in the way) otherwise.
func (l *LockSet) TryLock(ctx context.Context) error { return l.lock(ctx, false) }

func (l *LockSet) lock(ctx context.Context, wait bool) error {
	if err := validMaxHold(l.maxHold); err != nil {
		return err
	}
	if err := validNames(l.names); err != nil {
		return err
	}
	s := l.s
	h, end, err := s.beginAcquire(ctx, "lock", l.names...)
	if err != nil {
		return err
	}
	defer end() // after the grants are tracked: the sweep must not take them before
	var g setGrant
	_, err = s.acquireLoop(ctx, h, wait, ErrLocked, "locks "+strings.Join(l.names, ", "), func(actx context.Context, chunk time.Duration) (time.Time, error) {
		var err error
		g, err = s.c.acquireAll(actx, l.names, s.id, chunk, acquireOpts{owner: l.owner, shared: l.shared, maxHold: l.maxHold})
		return g.sentAt, err
	}, l.forgetGrants, func(time.Time) bool { return l.took(h, g) })
	return err
}

// took: as Mutex.took, for every grant of the set.
func (l *LockSet) took(h *asking, g setGrant) bool {
	s := l.s
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	refs := make([]*grantRef, 0, len(g.Grants))
	for _, x := range g.Grants {
		name := x.Name
		ref := &grantRef{space: "lock", name: name, token: x.FencingToken, seenAt: now}
		ref.lost = func(err error) { l.grantLost(ref, err) }
		ref.waiters = func(n int) { l.cont.note(name, n) }
		refs = append(refs, ref)
	}
	if !s.trackAnswered(h, refs...) {
		return false
	}
	for _, r := range l.refs {
		s.untrack(r)
	}
	l.refs = refs
	l.cont.reset()
	l.tokens = make(map[string]int64, len(g.Grants))
	for _, x := range g.Grants {
		l.tokens[x.Name] = x.FencingToken
	}
	l.holdUntil = s.holdDeadline(g.sentAt, l.maxHold)
	for _, x := range g.Grants {
		l.holdUntil = earliest(l.holdUntil, s.grantHoldDeadline(g.sentAt, 0, x.MaxHoldMs))
	}
	l.held = true
	l.lostErr = nil
	return true
}

func (l *LockSet) grantLost(ref *grantRef, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.refs {
		if r == ref && l.lostErr == nil {
			l.lostErr = err
		}
	}
}

// forgetGrants: the acquire-all ended without a definite "not applied", so the server may
// have granted the set, or may still queue it: one release-all gives every name back and
// ends the wait (docs/client.md). The session then watches every name for a grant a late
// copy of the acquire-all makes (sweep.go).
func (l *LockSet) forgetGrants(cause error) {
	s := l.s
	if s.assertOpen() != nil {
		return
	}
	l.mu.Lock()
	if l.held {
		l.mu.Unlock()
		return // a re-Lock of a set we hold: the earlier grants stay ours
	}
	l.mu.Unlock()
	s.cleanUp("lock", l.names, func() {
		if _, err := s.c.releaseAll(context.Background(), l.names, s.id, s.c.requestTimeout); err != nil && !errors.Is(err, ErrSessionNotFound) {
			s.c.warn(fmt.Sprintf("could not release %s after an acquire-all that gave up (%v); they are freed when session %s ends", strings.Join(l.names, ", "), cause, s.id), err)
		}
	})
}

// Unlock releases every lock of the set in one request (a lock lost meanwhile by its token
// alone). Held() turns false before the request is sent. Unlocking a set that is not
// held, or whose session ended, does nothing.
func (l *LockSet) Unlock(ctx context.Context) error {
	l.mu.Lock()
	if !l.held {
		l.mu.Unlock()
		return nil
	}
	l.held = false
	lost := l.lostErr != nil
	refs := l.refs
	l.refs = nil
	l.mu.Unlock()
	// outside l.mu: the release ends every other grant object of the names
	given := l.s.givingBack("lock", l.names, 0, refs...)
	defer given()
	if l.s.assertOpen() != nil {
		return nil
	}
	var err error
	if lost {
		// a name revoked meanwhile may be held again by this session: release by token
		for _, r := range refs {
			if e := l.s.c.release(ctx, r.name, l.s.id, r.token, 0); e != nil && !errors.Is(e, ErrNotHolder) && err == nil {
				err = e
			}
		}
	} else {
		_, err = l.s.c.releaseAll(ctx, l.names, l.s.id, 0)
	}
	if errors.Is(err, ErrSessionNotFound) {
		l.s.markLost(fmt.Sprintf("the server no longer knows session %s", l.s.id), err)
	}
	return err
}

func validNames(names []string) error {
	if len(names) < 1 || len(names) > 64 {
		return &Error{Code: "invalid_request", Message: fmt.Sprintf("raftlock: a lock set names 1-64 locks, got %d", len(names))}
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" || seen[n] {
			return &Error{Code: "invalid_request", Message: fmt.Sprintf("raftlock: lock set names must be distinct and non-empty, got %q", n)}
		}
		seen[n] = true
	}
	return nil
}

// setGrant is an acquire-all's answer.
type setGrant struct {
	SessionID string `json:"session_id"`
	TTLMs     int64  `json:"ttl_ms"`
	Grants    []struct {
		Name         string `json:"name"`
		FencingToken int64  `json:"fencing_token"`
		// MaxHoldMs: this grant's remaining max hold, when it has one (grantHoldDeadline)
		MaxHoldMs *int64 `json:"max_hold_ms,omitempty"`
	} `json:"grants"`
	sentAt time.Time
}

func (c *Client) acquireAll(ctx context.Context, names []string, sessionID string, wait time.Duration, o acquireOpts) (setGrant, error) {
	base := map[string]interface{}{"names": names, "session_id": sessionID}
	if o.owner != "" {
		base["owner"] = o.owner
	}
	if o.shared {
		base["mode"] = "shared"
	}
	if o.maxHold > 0 {
		base["max_hold_ms"] = o.maxHold.Milliseconds()
	}
	var g setGrant
	what := "acquire-all " + strings.Join(names, ", ")
	a, err := c.waitingCall(ctx, "/v1/locks/acquire-all", base, wait)
	if err != nil {
		return g, err
	}
	if err := decode(a, what, &g); err != nil {
		return g, err
	}
	// a grant of another name, or one missing, would hand out a token for the wrong lock
	ok := len(g.Grants) == len(names)
	for i := 0; ok && i < len(names); i++ {
		ok = g.Grants[i].Name == names[i] && g.Grants[i].FencingToken > 0
	}
	if !ok {
		return g, &Error{Code: "bad_response", Endpoint: a.endpoint, Message: a.endpoint + ": " + what + ": the grants do not match the names asked for"}
	}
	g.sentAt = a.sentAt
	return g, nil
}

func (c *Client) releaseAll(ctx context.Context, names []string, sessionID string, budget time.Duration) ([]string, error) {
	cl := call{method: "POST", path: "/v1/locks/release-all", body: fixed(map[string]interface{}{"names": names, "session_id": sessionID}), mode: modeKeyed, key: newKey()}
	if budget > 0 {
		cl.deadline = time.Now().Add(budget)
	}
	a, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	var r struct {
		Released []string `json:"released"`
	}
	err = decode(a, "release-all", &r)
	return r.Released, err
}
