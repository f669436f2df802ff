package raftlock

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"
)

// Semaphore is permits of a counting semaphore taken in one session
// (docs/contract.md §4 "Semaphores"): at most Limit permits are held at once, waiters
// queue FIFO, and every grant carries a fencing token from the same sequence as locks.
type Semaphore struct {
	s       *Session
	name    string
	limit   int
	permits int
	owner   string
	maxHold time.Duration

	mu        sync.Mutex
	token     int64
	held      bool
	holdUntil time.Time
	ref       *grantRef
	lostErr   error
}

// SemaphoreOption configures NewSemaphore.
type SemaphoreOption func(*Semaphore)

// WithPermits takes n permits (default 1, at most the limit).
func WithPermits(n int) SemaphoreOption { return func(m *Semaphore) { m.permits = n } }

// WithSemaphoreOwner names the owner of the grants (default: the session's owner).
func WithSemaphoreOwner(owner string) SemaphoreOption { return func(m *Semaphore) { m.owner = owner } }

// WithSemaphoreMaxHold: as WithMaxHold for a lock.
func WithSemaphoreMaxHold(d time.Duration) SemaphoreOption {
	return func(m *Semaphore) { m.maxHold = d }
}

// NewSemaphore returns semaphore name of limit (1–10000) in session s. The first acquire
// of an idle semaphore sets its limit; another limit while it is busy is ErrLimitMismatch.
func NewSemaphore(s *Session, name string, limit int, opts ...SemaphoreOption) *Semaphore {
	m := &Semaphore{s: s, name: name, limit: limit, permits: 1}
	for _, f := range opts {
		f(m)
	}
	return m
}

// Name is the semaphore's name.
func (m *Semaphore) Name() string { return m.name }

// FencingToken is the token of the last grant (0 before the first acquire).
func (m *Semaphore) FencingToken() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token
}

// Held: as Mutex.Held.
func (m *Semaphore) Held() bool {
	m.mu.Lock()
	held := m.held && m.lostErr == nil && (m.holdUntil.IsZero() || time.Now().Before(m.holdUntil))
	m.mu.Unlock()
	return held && m.s.isProven()
}

// Err: as Mutex.Err.
func (m *Semaphore) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lostErr
}

// Acquire waits in the FIFO queue until the permits are granted, ctx is done or the
// session is lost.
func (m *Semaphore) Acquire(ctx context.Context) error { return m.acquire(ctx, true) }

// TryAcquire takes the permits if they are free now; ErrSemaphoreFull otherwise.
func (m *Semaphore) TryAcquire(ctx context.Context) error { return m.acquire(ctx, false) }

func (m *Semaphore) acquire(ctx context.Context, wait bool) error {
	if m.limit < 1 || m.limit > 10000 {
		return &Error{Code: "invalid_request", Message: fmt.Sprintf("raftlock: semaphore limit must be in 1..10000, got %d", m.limit)}
	}
	if m.permits < 1 || m.permits > m.limit {
		return &Error{Code: "invalid_request", Message: fmt.Sprintf("raftlock: permits must be in 1..limit (%d), got %d", m.limit, m.permits)}
	}
	if err := validMaxHold(m.maxHold); err != nil {
		return err
	}
	s := m.s
	h, end, err := s.beginAcquire(ctx, "semaphore", m.name)
	if err != nil {
		return err
	}
	defer end() // after the grant is tracked: the sweep must not take it before
	var g semaphoreGrant
	_, err = s.acquireLoop(ctx, h, wait, ErrSemaphoreFull, "semaphore "+m.name, func(actx context.Context, chunk time.Duration) (time.Time, error) {
		return s.grantCall(actx, semaphorePath(m.name, "acquire"), map[string]interface{}{"session_id": s.id, "limit": m.limit, "permits": m.permits},
			m.owner, m.maxHold, chunk, "acquire semaphore "+m.name, &g, func() int64 { return g.FencingToken })
	}, m.forget, func(sentAt time.Time) bool { return m.took(h, g, sentAt) })
	return err
}

// took: as Mutex.took.
func (m *Semaphore) took(h *asking, g semaphoreGrant, sentAt time.Time) bool {
	s := m.s
	m.mu.Lock()
	defer m.mu.Unlock()
	until := s.grantHoldDeadline(sentAt, m.maxHold, g.MaxHoldMs)
	if m.held && m.token == g.FencingToken && m.lostErr == nil {
		if !s.answerStands(h) {
			return false
		}
		m.holdUntil = earliest(m.holdUntil, until)
	} else {
		ref := &grantRef{space: "semaphore", name: m.name, token: g.FencingToken, seenAt: time.Now()}
		ref.lost = func(err error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.ref == ref {
				m.lostErr = err
			}
		}
		if !s.trackAnswered(h, ref) {
			return false
		}
		s.untrack(m.ref)
		m.holdUntil = until
		m.ref = ref
	}
	m.token, m.held, m.lostErr = g.FencingToken, true, nil
	return true
}

// forget: see Mutex.forgetGrant. A semaphore release by a session that only waits
// withdraws the wait (docs/api.md "Release").
func (m *Semaphore) forget(cause error) {
	s := m.s
	if s.assertOpen() != nil {
		return
	}
	m.mu.Lock()
	if m.held {
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	s.cleanUp("semaphore", []string{m.name}, func() {
		err := s.c.releaseSemaphore(context.Background(), m.name, s.id, s.c.requestTimeout)
		if err != nil && !errors.Is(err, ErrNotHolder) && !errors.Is(err, ErrSessionNotFound) {
			s.c.warn(fmt.Sprintf("could not release semaphore %s after an acquire that gave up (%v); it is freed when session %s ends", m.name, cause, s.id), err)
		}
	})
}

// Release gives every permit this session holds of the semaphore back. Held() turns
// false before the request is sent.
func (m *Semaphore) Release(ctx context.Context) error {
	m.mu.Lock()
	if !m.held {
		m.mu.Unlock()
		return nil
	}
	m.held = false
	ref := m.ref
	m.ref = nil
	m.mu.Unlock()
	// outside m.mu: the release ends every other grant object of the name
	given := m.s.givingBack("semaphore", []string{m.name}, 0, ref)
	defer given()
	if m.s.assertOpen() != nil {
		return nil
	}
	err := m.s.c.releaseSemaphore(ctx, m.name, m.s.id, 0)
	if errors.Is(err, ErrSessionNotFound) {
		m.s.markLost(fmt.Sprintf("the server no longer knows session %s", m.s.id), err)
	}
	return err
}

type semaphoreGrant struct {
	Name         string `json:"name"`
	SessionID    string `json:"session_id"`
	Permits      int    `json:"permits"`
	Limit        int    `json:"limit"`
	FencingToken int64  `json:"fencing_token"`
	TTLMs        int64  `json:"ttl_ms"`
	// MaxHoldMs: the grant's remaining max hold, when it has one (grantHoldDeadline)
	MaxHoldMs *int64 `json:"max_hold_ms,omitempty"`
}

func semaphorePath(name, action string) string {
	p := "/v1/semaphores/" + url.PathEscape(name)
	if action != "" {
		p += "/" + action
	}
	return p
}

func (c *Client) releaseSemaphore(ctx context.Context, name, sessionID string, budget time.Duration) error {
	cl := call{method: "POST", path: semaphorePath(name, "release"), body: fixed(map[string]interface{}{"session_id": sessionID}), mode: modeKeyed, key: newKey()}
	if budget > 0 {
		cl.deadline = time.Now().Add(budget)
	}
	_, err := c.do(ctx, cl)
	return err
}

// SemaphoreInfo is the state of one semaphore (GET /v1/semaphores/{name}); an idle one
// has limit 0 and nobody.
type SemaphoreInfo struct {
	Name    string `json:"name"`
	Limit   int    `json:"limit"`
	InUse   int    `json:"in_use"`
	Holders []struct {
		SessionID    string `json:"session_id"`
		Owner        string `json:"owner"`
		Permits      int    `json:"permits"`
		FencingToken int64  `json:"fencing_token"`
	} `json:"holders"`
	Waiters []struct {
		SessionID string `json:"session_id"`
		Owner     string `json:"owner"`
		Permits   int    `json:"permits"`
		Position  int    `json:"position"`
	} `json:"waiters"`
}

// GetSemaphore reads a semaphore's state (linearizable).
func (c *Client) GetSemaphore(ctx context.Context, name string) (SemaphoreInfo, error) {
	var si SemaphoreInfo
	a, err := c.do(ctx, call{method: "GET", path: semaphorePath(name, ""), mode: modeRead})
	if err != nil {
		return si, err
	}
	err = decode(a, "get semaphore "+name, &si)
	return si, err
}
