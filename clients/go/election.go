package raftlock

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"
)

// Leader election (docs/contract.md §4 "Leader election"), shaped after etcd's
// concurrency.Election: an election is a lock whose holder publishes a value. Campaign
// returns a Leadership once this session leads; its FencingToken is the epoch every write
// of the leader (and its followers) must carry, and its Done channel closes the moment
// leadership can no longer be proven — the session's lease, a resign, a revoke or max
// hold found by a keepalive, a proclaim the server refused.

// LeaderInfo is an election's leader.
type LeaderInfo struct {
	SessionID    string `json:"session_id"`
	Value        string `json:"value"`
	FencingToken int64  `json:"fencing_token"`
	// Index is the log index of the change that made this the leader (Observe only).
	Index uint64 `json:"-"`
}

// Election is one election name, campaigned in one session.
type Election struct {
	s       *Session
	name    string
	owner   string
	maxHold time.Duration
}

// ElectionOption configures NewElection.
type ElectionOption func(*Election)

// WithElectionOwner names the owner of the leadership (default: the session's owner).
func WithElectionOwner(owner string) ElectionOption { return func(e *Election) { e.owner = owner } }

// WithElectionMaxHold: the server ends each leadership d after it began (max_hold_ms).
func WithElectionMaxHold(d time.Duration) ElectionOption { return func(e *Election) { e.maxHold = d } }

// NewElection returns election name in session s. Nothing is sent yet.
func NewElection(s *Session, name string, opts ...ElectionOption) *Election {
	e := &Election{s: s, name: name}
	for _, f := range opts {
		f(e)
	}
	return e
}

// Key is the election's name.
func (e *Election) Key() string { return e.name }

// Campaign waits in the election's FIFO queue until this session leads, ctx is done or
// the session is lost. A campaign that gives up withdraws (no leadership is left behind).
func (e *Election) Campaign(ctx context.Context, value string) (*Leadership, error) {
	return e.campaign(ctx, value, true)
}

// TryCampaign leads if nobody does; else ErrLocked, with Error.Leader naming the leader.
func (e *Election) TryCampaign(ctx context.Context, value string) (*Leadership, error) {
	return e.campaign(ctx, value, false)
}

type campaignGrant struct {
	Name         string `json:"name"`
	SessionID    string `json:"session_id"`
	Value        string `json:"value"`
	FencingToken int64  `json:"fencing_token"`
	TTLMs        int64  `json:"ttl_ms"`
	// MaxHoldMs: the leadership's remaining max hold, when it has one (grantHoldDeadline)
	MaxHoldMs *int64 `json:"max_hold_ms,omitempty"`
}

func (e *Election) campaign(ctx context.Context, value string, wait bool) (*Leadership, error) {
	if len(value) > 4096 {
		return nil, &Error{Code: "invalid_request", Message: fmt.Sprintf("raftlock: an election value is at most 4096 bytes, got %d", len(value))}
	}
	if err := validMaxHold(e.maxHold); err != nil {
		return nil, err
	}
	s := e.s
	h, end, err := s.beginAcquire(ctx, "lock", e.name)
	if err != nil {
		return nil, err
	}
	defer end() // after the leadership is tracked: the sweep must not take it before
	var g campaignGrant
	var l *Leadership
	sentAt, err := s.acquireLoop(ctx, h, wait, ErrLocked, "election "+e.name, func(actx context.Context, chunk time.Duration) (time.Time, error) {
		return s.grantCall(actx, electionPath(e.name, "campaign"), map[string]interface{}{"session_id": s.id, "value": value},
			e.owner, e.maxHold, chunk, "campaign "+e.name, &g, func() int64 { return g.FencingToken })
	}, func(cause error) {
		// An election is the lock of its name on the server: a release withdraws a wait
		// and frees a leadership won unseen (docs/api.md "Release"). The name is then
		// watched for a leadership a late copy of the campaign wins (sweep.go).
		if s.assertOpen() != nil {
			return
		}
		s.cleanUp("lock", []string{e.name}, func() {
			err := s.c.release(context.Background(), e.name, s.id, 0, s.c.requestTimeout)
			if err != nil && !errors.Is(err, ErrNotHolder) && !errors.Is(err, ErrSessionNotFound) {
				s.c.warn(fmt.Sprintf("could not withdraw from election %s after a campaign that gave up (%v); it is freed when session %s ends", e.name, cause, s.id), err)
			}
		})
	}, func(time.Time) bool {
		l = &Leadership{e: e, token: g.FencingToken, value: g.Value, done: make(chan struct{})}
		l.ref = &grantRef{space: "lock", name: e.name, token: g.FencingToken, seenAt: time.Now(), lost: l.end}
		return s.trackAnswered(h, l.ref)
	})
	if err != nil {
		return nil, err
	}
	if until := s.grantHoldDeadline(sentAt, e.maxHold, g.MaxHoldMs); !until.IsZero() {
		l.holdTimer = time.AfterFunc(time.Until(until), func() {
			l.end(&Error{Code: "lock_lost", Message: fmt.Sprintf("raftlock: leadership of election %s (token %d) reached its max hold", e.name, l.token)})
		})
	}
	go func() {
		select {
		case <-s.done:
			l.end(s.Err())
		case <-l.done:
		}
	}()
	return l, nil
}

// Leader reads the election's leader (linearizable); nil while none leads.
func (e *Election) Leader(ctx context.Context) (*LeaderInfo, error) { return e.s.c.Leader(ctx, e.name) }

// Observe follows the election's leader (see Client.Observe).
func (e *Election) Observe(ctx context.Context) *Observer { return e.s.c.Observe(ctx, e.name) }

// Leadership is this session's lead of an election.
type Leadership struct {
	e         *Election
	token     int64
	ref       *grantRef
	holdTimer *time.Timer

	mu    sync.Mutex
	value string
	err   error
	done  chan struct{}
}

// FencingToken is the leader's epoch: pass it with every write.
func (l *Leadership) FencingToken() int64 { return l.token }

// Value is the published value (the campaign's, then the last proclaimed).
func (l *Leadership) Value() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.value
}

// Done is closed when the leadership ends or can no longer be proven.
func (l *Leadership) Done() <-chan struct{} { return l.done }

// Err is nil while leading, else why it ended.
func (l *Leadership) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Held reports whether this session leads, provably, right now.
func (l *Leadership) Held() bool {
	select {
	case <-l.done:
		return false
	default:
	}
	return l.e.s.isProven()
}

func (l *Leadership) end(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
		return
	default:
	}
	if err == nil {
		err = &Error{Code: "lock_lost", Message: fmt.Sprintf("raftlock: leadership of election %s ended", l.e.name)}
	}
	l.err = err
	if l.holdTimer != nil {
		l.holdTimer.Stop()
	}
	close(l.done)
}

// Proclaim publishes a new value. ErrNotHolder (and Done closes) when this session no
// longer leads.
func (l *Leadership) Proclaim(ctx context.Context, value string) error {
	if !l.Held() {
		if err := l.Err(); err != nil {
			return err
		}
		return &Error{Code: "lock_lost", Message: fmt.Sprintf("raftlock: leadership of election %s can no longer be proven", l.e.name)}
	}
	s := l.e.s
	a, err := s.c.do(ctx, call{method: "POST", path: electionPath(l.e.name, "proclaim"), body: fixed(map[string]interface{}{"session_id": s.id, "value": value}), mode: modeKeyed, key: newKey()})
	if err != nil {
		if errors.Is(err, ErrNotHolder) {
			s.untrack(l.ref)
			l.end(err)
		}
		return err
	}
	var r struct {
		Value *string `json:"value"`
	}
	_ = decode(a, "proclaim "+l.e.name, &r)
	l.mu.Lock()
	l.value = value
	if r.Value != nil {
		l.value = *r.Value
	}
	l.mu.Unlock()
	return nil
}

// Resign steps down: Done closes first, then the next candidate leads. Resigning twice,
// or a leadership already lost, does nothing.
func (l *Leadership) Resign(ctx context.Context) error {
	select {
	case <-l.done:
		l.mu.Lock()
		resigned := l.err != nil && errors.Is(l.err, errResigned)
		l.mu.Unlock()
		s := l.e.s
		if resigned || s.assertOpen() != nil {
			return nil
		}
	default:
		l.end(&Error{Code: "lock_lost", Message: fmt.Sprintf("raftlock: resigned from election %s", l.e.name), Err: errResigned})
	}
	s := l.e.s
	given := s.givingBack("lock", []string{l.e.name}, 0, l.ref)
	defer given()
	if s.assertOpen() != nil {
		return nil // its end frees the leadership
	}
	_, err := s.c.do(ctx, call{method: "POST", path: electionPath(l.e.name, "resign"), body: fixed(map[string]interface{}{"session_id": s.id}), mode: modeKeyed, key: newKey()})
	if errors.Is(err, ErrNotHolder) {
		return nil // nothing is left to give up
	}
	return err
}

var errResigned = errors.New("resigned")

func electionPath(name, action string) string {
	p := "/v1/elections/" + url.PathEscape(name)
	if action != "" {
		p += "/" + action
	}
	return p
}

// Leader reads election name's leader (linearizable); nil while none leads.
func (c *Client) Leader(ctx context.Context, name string) (*LeaderInfo, error) {
	a, err := c.do(ctx, call{method: "GET", path: electionPath(name, ""), mode: modeRead})
	if err != nil {
		return nil, err
	}
	var r struct {
		Leader *LeaderInfo `json:"leader"`
	}
	if err := decode(a, "get election "+name, &r); err != nil {
		return nil, err
	}
	return r.Leader, nil
}
