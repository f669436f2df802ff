package raftlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Mutex is one lock name taken in one session, like etcd's concurrency.Mutex. Work done
// under it should pass FencingToken() to every resource it writes: Held() and the
// session's Done() say "stop", the token makes a late writer harmless when stopping was
// not quick enough.
type Mutex struct {
	s       *Session
	key     string
	owner   string
	shared  bool
	maxHold time.Duration

	mu        sync.Mutex
	token     int64
	held      bool
	holdUntil time.Time // zero: no max hold
	ref       *grantRef
	lostErr   error // set when a keepalive answer no longer listed the grant
	cont      *contention
}

// MutexOption configures NewMutex.
type MutexOption func(*Mutex)

// WithMutexOwner names the owner of this lock's grants (default: the session's owner).
func WithMutexOwner(owner string) MutexOption {
	return func(m *Mutex) { m.owner = owner }
}

// WithShared takes the lock shared (a read lock): shared holders coexist, an exclusive
// request waits until every holder has released (docs/contract.md §4 "Shared (read) locks").
func WithShared() MutexOption {
	return func(m *Mutex) { m.shared = true }
}

// WithMaxHold asks the server to free each grant d after making it, even while the
// session lives (max_hold_ms, 100 ms or more). Held() turns false a safety margin before.
func WithMaxHold(d time.Duration) MutexOption {
	return func(m *Mutex) { m.maxHold = d }
}

// NewMutex returns a mutex for the lock name key in session s. Nothing is sent yet.
func NewMutex(s *Session, key string, opts ...MutexOption) *Mutex {
	m := &Mutex{s: s, key: key, cont: newContention()}
	for _, f := range opts {
		f(m)
	}
	return m
}

// Key is the lock name.
func (m *Mutex) Key() string { return m.key }

// FencingToken is the token of the last grant (0 before the first Lock).
func (m *Mutex) FencingToken() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token
}

// Held reports whether the lock is held and the session's lease is proven right now: not
// released, not past its max hold, not found revoked by a keepalive. Check it right
// before an action that needs the lock.
func (m *Mutex) Held() bool {
	m.mu.Lock()
	held := m.held && m.lostErr == nil && (m.holdUntil.IsZero() || time.Now().Before(m.holdUntil))
	m.mu.Unlock()
	return held && m.s.isProven()
}

// Err is why the last grant was lost while its session lives on (revoked, or freed by
// its max hold, as a keepalive answer showed; errors.Is ErrLockLost), else nil.
func (m *Mutex) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lostErr
}

// Waiters is how many requests waited on the lock at the session's last keepalive (0 until
// one says otherwise, or from a server that does not tell): docs/contract.md §5 "Contention".
func (m *Mutex) Waiters() int { return m.cont.of(m.key) }

// Contended receives a Contention when a keepalive finds requests waiting on the lock where
// the one before found none: a long job can yield at a safe point (Unlock, then Lock again).
func (m *Mutex) Contended() <-chan Contention { return m.cont.ch }

// Check asks the cluster (linearizable) whether this mutex's token still holds the lock
// (Chubby's CheckSequencer).
func (m *Mutex) Check(ctx context.Context) (bool, error) {
	t := m.FencingToken()
	if t <= 0 {
		return false, nil
	}
	return m.s.c.checkToken(ctx, m.key, t)
}

// Lock waits in the lock's FIFO queue until it is granted, ctx is done or the session is
// lost. Waits longer than the contract's 300 s re-queue.
func (m *Mutex) Lock(ctx context.Context) error { return m.lock(ctx, true) }

// TryLock takes the lock if it is free; ErrLocked when another session holds it.
func (m *Mutex) TryLock(ctx context.Context) error { return m.lock(ctx, false) }

func (m *Mutex) lock(ctx context.Context, wait bool) error {
	if err := validMaxHold(m.maxHold); err != nil {
		return err
	}
	s := m.s
	h, end, err := s.beginAcquire(ctx, "lock", m.key)
	if err != nil {
		return err
	}
	defer end() // after the grant is tracked: the sweep must not take it before
	var g grant
	_, err = s.acquireLoop(ctx, h, wait, ErrLocked, "lock "+m.key, func(actx context.Context, chunk time.Duration) (time.Time, error) {
		var err error
		g, err = s.c.acquire(actx, m.key, s.id, chunk, acquireOpts{owner: m.owner, shared: m.shared, maxHold: m.maxHold})
		return g.sentAt, err
	}, m.forgetGrant, func(time.Time) bool { return m.took(h, g) })
	return err
}

// took makes g, the grant an acquire answered, this mutex's, unless a release of the
// name in the session started while the request was out (asking): then false.
func (m *Mutex) took(h *asking, g grant) bool {
	s := m.s
	m.mu.Lock()
	defer m.mu.Unlock()
	// A second acquire of a lock the session holds returns the same grant, whose max
	// hold the server keeps from the first: the earlier deadline stands, bounded by what
	// the server answered of it.
	until := s.grantHoldDeadline(g.sentAt, m.maxHold, g.MaxHoldMs)
	if m.held && m.token == g.FencingToken && m.lostErr == nil {
		if !s.answerStands(h) {
			return false
		}
		m.holdUntil = earliest(m.holdUntil, until)
	} else {
		ref := &grantRef{space: "lock", name: m.key, token: g.FencingToken, seenAt: time.Now()}
		ref.lost = func(err error) { m.grantLost(ref, err) }
		ref.waiters = func(n int) { m.cont.note(m.key, n) }
		if !s.trackAnswered(h, ref) {
			return false
		}
		s.untrack(m.ref)
		m.holdUntil = until
		m.cont.reset()
		m.ref = ref
	}
	m.token = g.FencingToken
	m.held = true
	m.lostErr = nil
	return true
}

func (m *Mutex) grantLost(ref *grantRef, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ref == ref {
		m.lostErr = err
	}
}

// forgetGrant: an acquire ended without a definite "not applied" (ctx done, outcome
// unknown, a network error, a malformed answer), so the server may have granted the lock
// — the grant can race the give-up. Release the name in this session before returning:
// the release is idempotent and harmless if nothing was granted (docs/client.md). The
// session then watches the name for a grant a late copy of the acquire makes (sweep.go).
func (m *Mutex) forgetGrant(cause error) {
	s := m.s
	if s.assertOpen() != nil {
		return // a lost or closed session is closed on the server, which frees its grants
	}
	m.mu.Lock()
	if m.held {
		m.mu.Unlock()
		return // a re-Lock of a lock we hold: the earlier grant stays ours
	}
	m.mu.Unlock()
	s.cleanUp("lock", []string{m.key}, func() {
		err := s.c.release(context.Background(), m.key, s.id, 0, s.c.requestTimeout)
		if err != nil && !errors.Is(err, ErrNotHolder) && !errors.Is(err, ErrSessionNotFound) {
			s.c.warn(fmt.Sprintf("could not release %s after an acquire that gave up (%v); it is freed when session %s ends", m.key, cause, s.id), err)
		}
	})
}

// Unlock releases the lock. Held() turns false before the release is sent: from then on
// holding it cannot be proven. Unlocking a mutex that is not held, or whose session was
// lost or closed, does nothing; unlocking a grant already revoked gives ErrNotHolder.
func (m *Mutex) Unlock(ctx context.Context) error {
	m.mu.Lock()
	if !m.held {
		m.mu.Unlock()
		return nil
	}
	m.held = false
	token, ref := m.token, m.ref
	m.ref = nil
	m.mu.Unlock()
	// outside m.mu: the release ends other grant objects of the token (their own locks)
	given := m.s.givingBack("lock", []string{m.key}, token, ref)
	defer given()
	if m.s.assertOpen() != nil {
		return nil
	}
	err := m.s.c.release(ctx, m.key, m.s.id, token, 0)
	if errors.Is(err, ErrSessionNotFound) {
		m.s.markLost(fmt.Sprintf("the server no longer knows session %s", m.s.id), err)
	}
	return err
}
