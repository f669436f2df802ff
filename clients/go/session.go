package raftlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A session is the lease every lock taken in it depends on, and the client's PROOF of it.
//
// The contract guarantees that a session never expires sooner than ttl after its client
// SENT its last acknowledged keepalive, renew or acquire. So the session is proven alive
// until
//
//	provenUntil = sendTime(last acknowledged renewal) + ttl − margin
//
// and it is declared lost at that instant at the latest — before the server could have
// expired it — rather than when some later call fails. The margin (default ttl/10,
// between 20 ms and 2 s) absorbs clock-rate differences and late timers; a process that
// is itself paused can still overrun it, which is what fencing tokens are for.
// Keepalives go out every ~ttl/3 with ±10% jitter; each may retry across endpoints until
// the proof runs out, and a failed one is retried quickly. Loss is final.

// LeaseID is the session id, the counterpart of etcd's lease.
type LeaseID string

// SessionOption configures NewSession.
type SessionOption func(*sessionOptions)

type sessionOptions struct {
	ttl       time.Duration
	owner     string
	lockDelay time.Duration
	margin    time.Duration
	interval  time.Duration
	ctx       context.Context
}

// WithTTL sets the session's TTL in seconds, like etcd's concurrency.WithTTL. Without
// it the cluster's default TTL applies.
func WithTTL(seconds int) SessionOption {
	return func(o *sessionOptions) { o.ttl = time.Duration(seconds) * time.Second }
}

// WithTTLDuration sets the TTL with sub-second precision (the cluster's min_ttl_ms applies).
func WithTTLDuration(d time.Duration) SessionOption {
	return func(o *sessionOptions) { o.ttl = d }
}

// WithOwner names the session's owner (up to 256 bytes), shown as the holder's owner.
func WithOwner(owner string) SessionOption {
	return func(o *sessionOptions) { o.owner = owner }
}

// WithLockDelay sets Chubby's lock-delay: a lock freed by this session's expiry stays
// unavailable this long.
func WithLockDelay(d time.Duration) SessionOption {
	return func(o *sessionOptions) { o.lockDelay = d }
}

// WithSafetyMargin overrides the margin subtracted from every proven deadline.
func WithSafetyMargin(d time.Duration) SessionOption {
	return func(o *sessionOptions) { o.margin = d }
}

// WithContext bounds opening the session (and, like etcd, ends the session when ctx is done).
func WithContext(ctx context.Context) SessionOption {
	return func(o *sessionOptions) { o.ctx = ctx }
}

// DefaultSafetyMargin is the margin for ttl: ttl/10, between 20 ms and 2 s.
func DefaultSafetyMargin(ttl time.Duration) time.Duration {
	m := (ttl + 5) / 10
	if m < 20*time.Millisecond {
		m = 20 * time.Millisecond
	}
	if m > 2*time.Second {
		m = 2 * time.Second
	}
	return m
}

type sessionState int

const (
	stateOpen sessionState = iota
	stateLost
	stateClosed
)

// Session is a lease kept alive by keepalives. Create it with NewSession; Close it when done.
type Session struct {
	c        *Client
	id       string
	ttl      time.Duration
	margin   time.Duration
	interval time.Duration

	mu        sync.Mutex
	state     sessionState
	proven    time.Time
	lastAck   time.Time
	err       error
	lostTimer *time.Timer
	done      chan struct{}
	ctx       context.Context // cancelled when the session is lost or closed
	cancel    context.CancelFunc
	// refs are the grants judged after every keepalive (grants.go)
	refs map[*grantRef]struct{}
	// the late-grant sweep's bookkeeping (sweep.go): names cleaned up after an acquire
	// that gave up, until when they are watched; acquires in flight per name; releases
	// in flight per name (a cleanup's, the sweep's, a grant object's own: givingBack)
	watched   map[nameKey]time.Time
	acquiring map[nameKey]int
	releases  map[nameKey]*releaseOut
	// asks are the acquires in flight per name, which a release that starts overtakes
	// (sweep.go asking)
	asks map[nameKey]map[*asking]struct{}
}

// NewSession opens a session on the server and starts keeping it alive.
func NewSession(c *Client, opts ...SessionOption) (*Session, error) {
	o := sessionOptions{ctx: context.Background()}
	for _, f := range opts {
		f(&o)
	}
	if o.ttl < 0 {
		return nil, &Error{Code: "invalid_request", Message: fmt.Sprintf("raftlock: session TTL must be positive, got %v", o.ttl)}
	}
	g, sentAt, err := c.openSession(o.ctx, o.ttl, o.owner, o.lockDelay)
	if err != nil {
		return nil, err
	}
	ttl := time.Duration(g.TTLMs) * time.Millisecond
	margin := o.margin
	if margin == 0 {
		margin = DefaultSafetyMargin(ttl)
	}
	interval := ttl / 3
	if margin < 0 || margin >= ttl/2 || interval <= 0 || interval >= ttl-margin {
		_ = c.closeSession(context.Background(), g.SessionID, 2*time.Second)
		return nil, &Error{Code: "invalid_request", Message: fmt.Sprintf("raftlock: safety margin must be in [0, ttl/2), got %v for ttl %v", margin, ttl)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{c: c, id: g.SessionID, ttl: ttl, margin: margin, interval: interval, done: make(chan struct{}), ctx: ctx, cancel: cancel}
	s.lastAck = sentAt
	s.proven = sentAt.Add(ttl - margin)
	s.mu.Lock()
	s.armLostTimerLocked()
	s.mu.Unlock()
	go s.keepaliveLoop()
	if o.ctx.Done() != nil {
		go func() {
			select {
			case <-o.ctx.Done():
				_ = s.Close()
			case <-s.done:
			}
		}()
	}
	return s, nil
}

// Client returns the client the session was opened with.
func (s *Session) Client() *Client { return s.c }

// Lease returns the session id.
func (s *Session) Lease() LeaseID { return LeaseID(s.id) }

// TTL is the session's TTL, as the server granted it.
func (s *Session) TTL() time.Duration { return s.ttl }

// Done is closed when the session is lost (its lease can no longer be proven) or closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is nil while the session is open, else why it ended (errors.Is ErrSessionLost).
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// ProvenUntil is the time until which the session is proven alive; the zero time once
// it is lost or closed.
func (s *Session) ProvenUntil() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateOpen {
		return time.Time{}
	}
	return s.proven
}

// LastAckSentAt is the send time of the last acknowledged renewal.
func (s *Session) LastAckSentAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastAck
}

// proven reports whether the lease is proven right now.
func (s *Session) isProven() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateOpen && time.Now().Before(s.proven)
}

// Close ends the session on the server (its locks are released at once) and stops the
// keepalives. Closing a lost or closed session only tidies up.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.state != stateOpen {
		s.mu.Unlock()
		return nil
	}
	s.endLocked(stateClosed, &Error{Code: "session_lost", Message: fmt.Sprintf("raftlock: session %s was closed", s.id)})
	s.mu.Unlock()
	err := s.c.closeSession(context.Background(), s.id, 0)
	if errors.Is(err, ErrSessionNotFound) {
		return nil // gone already: its locks are free
	}
	return err
}

// Orphan stops the keepalives without closing the session on the server (etcd's Orphan):
// the session, and its locks, expire after the TTL.
func (s *Session) Orphan() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateOpen {
		s.endLocked(stateClosed, &Error{Code: "session_lost", Message: fmt.Sprintf("raftlock: session %s was orphaned", s.id)})
	}
}

func (s *Session) assertOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateOpen {
		return nil
	}
	return s.err
}

// noteAck: an acknowledged renewal sent at sentAt extends the proof (never shortens it).
func (s *Session) noteAck(sentAt time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateOpen {
		return
	}
	until := sentAt.Add(s.ttl - s.margin)
	if !until.After(s.proven) {
		return
	}
	s.proven = until
	s.lastAck = sentAt
	s.armLostTimerLocked()
}

func (s *Session) armLostTimerLocked() {
	if s.lostTimer != nil {
		s.lostTimer.Stop()
	}
	s.lostTimer = time.AfterFunc(time.Until(s.proven), s.onLostTimer)
}

func (s *Session) onLostTimer() {
	s.mu.Lock()
	if s.state != stateOpen {
		s.mu.Unlock()
		return
	}
	if time.Now().Before(s.proven) { // extended meanwhile, or the timer fired early
		s.armLostTimerLocked()
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.markLost(fmt.Sprintf("no keepalive of session %s was acknowledged in time: the lease can no longer be proven (ttl %v, margin %v)", s.id, s.ttl, s.margin), nil)
}

func (s *Session) jittered() time.Duration {
	d := time.Duration(float64(s.interval) * (0.9 + 0.2*s.c.random()))
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}

func (s *Session) keepaliveLoop() {
	wait := s.jittered()
	for {
		t := time.NewTimer(wait)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		s.mu.Lock()
		deadline := s.proven
		s.mu.Unlock()
		// The call may keep retrying until the proof runs out; after that it is moot.
		ctx, cancel := context.WithDeadline(s.ctx, deadline)
		askedAt := time.Now()
		sentAt, grants, err := s.c.keepalive(ctx, s.id, deadline)
		cancel()
		if s.ctx.Err() != nil {
			return
		}
		if err == nil {
			s.noteAck(sentAt)
			if grants != nil {
				s.judgeGrants(grants, askedAt)
				s.sweepLate(grants)
			}
			wait = s.jittered()
			continue
		}
		if errors.Is(err, ErrSessionNotFound) {
			s.markLost(fmt.Sprintf("the server no longer knows session %s (expired or closed)", s.id), err)
			return
		}
		if errors.Is(err, ErrPermissionDenied) || errors.Is(err, ErrInvalidRequest) {
			s.markLost(fmt.Sprintf("keepalive of session %s was refused: %v", s.id, err), err)
			return
		}
		s.c.warn(fmt.Sprintf("keepalive of session %s failed; retrying", s.id), err)
		wait = s.jittered()
		if wait > 200*time.Millisecond {
			wait = 200 * time.Millisecond
		}
	}
}

func (s *Session) endLocked(st sessionState, err error) {
	s.state = st
	s.err = err
	if s.lostTimer != nil {
		s.lostTimer.Stop()
	}
	s.cancel()
	close(s.done)
}

// markLost is final: Done closes, and if the server may still have the session it is
// closed there (best effort, 2 s) so waiters get the locks now rather than at expiry.
func (s *Session) markLost(why string, cause error) {
	s.mu.Lock()
	if s.state != stateOpen {
		s.mu.Unlock()
		return
	}
	s.endLocked(stateLost, &Error{Code: "session_lost", Message: "raftlock: " + why, Err: cause})
	s.mu.Unlock()
	if !errors.Is(cause, ErrSessionNotFound) {
		go func() { _ = s.c.closeSession(context.Background(), s.id, 2*time.Second) }()
	}
}
