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
	s     *Session
	key   string
	owner string

	mu    sync.Mutex
	token int64
	held  bool
}

// MutexOption configures NewMutex.
type MutexOption func(*Mutex)

// WithMutexOwner names the owner of this lock's grants (default: the session's owner).
func WithMutexOwner(owner string) MutexOption {
	return func(m *Mutex) { m.owner = owner }
}

// NewMutex returns a mutex for the lock name key in session s. Nothing is sent yet.
func NewMutex(s *Session, key string, opts ...MutexOption) *Mutex {
	m := &Mutex{s: s, key: key}
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

// Held reports whether the lock is held and the session's lease is proven right now.
// Check it right before an action that needs the lock.
func (m *Mutex) Held() bool {
	m.mu.Lock()
	held := m.held
	m.mu.Unlock()
	return held && m.s.isProven()
}

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
	s := m.s
	if err := s.assertOpen(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // nothing was sent
	}
	// The acquire ends when ctx is done or the session ends, whichever is first.
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-actx.Done():
		}
	}()
	for {
		chunk := time.Duration(0)
		if wait {
			chunk = maxWaitPerRequest
			if dl, ok := ctx.Deadline(); ok {
				if left := time.Until(dl).Truncate(time.Millisecond); left < chunk {
					chunk = left
				}
				if chunk < 0 {
					chunk = 0
				}
			}
		}
		g, err := s.c.acquire(actx, m.key, s.id, chunk, m.owner)
		if err != nil {
			if errors.Is(err, ErrSessionNotFound) {
				s.markLost(fmt.Sprintf("the server no longer knows session %s", s.id), err)
			}
			if wait && chunk > time.Millisecond && errors.Is(err, ErrLocked) && actx.Err() == nil {
				continue // this wait ran out before ctx: queue again
			}
			if !definitelyNotApplied(err) {
				m.forgetGrant(err)
			}
			if actx.Err() != nil && ctx.Err() == nil {
				if serr := s.assertOpen(); serr != nil {
					return serr // the session ended while we waited
				}
			}
			if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
				return ctx.Err()
			}
			return err
		}
		// A granted acquire renewed the session from its arrival, no earlier than its send.
		s.noteAck(g.sentAt)
		if serr := s.assertOpen(); serr != nil {
			return serr // lost meanwhile: closing a lost session frees the grant
		}
		if !s.isProven() {
			// Granted after a wait whose only proof is older than the lease: holding it
			// cannot be proven, so it is not claimed. (Keepalives normally prevent this.)
			m.forgetGrant(nil)
			return &Error{Code: "lock_lost", Message: fmt.Sprintf("raftlock: lock %s was granted but session %s could not be proven alive", m.key, s.id)}
		}
		m.mu.Lock()
		m.token = g.FencingToken
		m.held = true
		m.mu.Unlock()
		return nil
	}
}

// forgetGrant: an acquire ended without a definite "not applied" (ctx done, outcome
// unknown, a network error, a malformed answer), so the server may have granted the lock
// — the grant can race the give-up. Release the name in this session before returning:
// the release is idempotent and harmless if nothing was granted (docs/client.md).
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
	err := s.c.release(context.Background(), m.key, s.id, 0, s.c.requestTimeout)
	if err != nil && !errors.Is(err, ErrNotHolder) && !errors.Is(err, ErrSessionNotFound) {
		s.c.warn(fmt.Sprintf("could not release %s after an acquire that gave up (%v); it is freed when session %s ends", m.key, cause, s.id), err)
	}
}

// Unlock releases the lock. Held() turns false before the release is sent: from then on
// holding it cannot be proven. Unlocking a mutex that is not held, or whose session was
// lost or closed, does nothing.
func (m *Mutex) Unlock(ctx context.Context) error {
	m.mu.Lock()
	if !m.held {
		m.mu.Unlock()
		return nil
	}
	m.held = false
	token := m.token
	m.mu.Unlock()
	if m.s.assertOpen() != nil {
		return nil
	}
	err := m.s.c.release(ctx, m.key, m.s.id, token, 0)
	if errors.Is(err, ErrSessionNotFound) {
		m.s.markLost(fmt.Sprintf("the server no longer knows session %s", m.s.id), err)
	}
	return err
}
