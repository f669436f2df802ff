package raftlock

import (
	"context"
	"fmt"
	"time"
)

// Revocation and maximum hold (docs/contract.md §4): a grant can end while its session
// lives on — an administrator revokes it, or its max_hold_ms runs out. The keepalive
// answer lists the session's grants (docs/api.md "Keepalive answers"), read on the
// leader after the keepalive arrived, so after each keepalive the session ends every
// grant it tracks that the list no longer has, matched by name and fencing token. Only
// grants answered before that keepalive was sent are judged: a later one may be newer
// than the list. A server whose answer has no list gives no such news; the fencing token
// still protects the resource.

// keepaliveGrant is one grant of a keepalive answer.
type keepaliveGrant struct {
	Kind         string `json:"kind"` // lock, election or semaphore
	Name         string `json:"name"`
	FencingToken int64  `json:"fencing_token"`
	Mode         string `json:"mode,omitempty"`
	// Waiters: how many requests wait on the name (docs/contract.md §5 "Contention");
	// nil from a server that does not say
	Waiters *int `json:"waiters,omitempty"`
}

// grantRef is a grant this client holds in a session: a Mutex's, a Semaphore's or a
// Leadership's. lost is called (once, outside the session's lock) when a keepalive
// answer no longer lists it.
type grantRef struct {
	space  string // "lock" (locks and elections) or "semaphore"
	name   string
	token  int64
	seenAt time.Time
	lost   func(error)
	// waiters, when set, is told each keepalive's count of requests waiting on the name
	// (outside the session's lock)
	waiters func(int)
}

// space is the grant's name space: "semaphore", or "lock" for locks and elections.
func (g keepaliveGrant) space() string {
	if g.Kind == "semaphore" {
		return "semaphore"
	}
	return "lock"
}

func grantKey(space, name string, token int64) string {
	return fmt.Sprintf("%s\x00%s\x00%d", space, name, token)
}

// track starts judging r after keepalives; untrack stops it.
func (s *Session) track(r *grantRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs == nil {
		s.refs = map[*grantRef]struct{}{}
	}
	s.refs[r] = struct{}{}
}

func (s *Session) untrack(r *grantRef) {
	if r == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.refs, r)
}

// judgeGrants ends every tracked grant answered before askedAt that grants lacks.
func (s *Session) judgeGrants(grants []keepaliveGrant, askedAt time.Time) {
	held := make(map[string]*int, len(grants))
	for _, g := range grants {
		held[grantKey(g.space(), g.Name, g.FencingToken)] = g.Waiters
	}
	var gone []*grantRef
	type count struct {
		r *grantRef
		n int
	}
	var counts []count
	s.mu.Lock()
	if s.state != stateOpen {
		s.mu.Unlock()
		return
	}
	for r := range s.refs {
		n, ok := held[grantKey(r.space, r.name, r.token)]
		if ok && n != nil && r.waiters != nil {
			counts = append(counts, count{r, *n})
		}
		if ok || r.seenAt.After(askedAt) {
			continue
		}
		delete(s.refs, r)
		gone = append(gone, r)
	}
	s.mu.Unlock()
	for _, c := range counts {
		c.r.waiters(c.n)
	}
	for _, r := range gone {
		r.lost(&Error{Code: "lock_lost", Message: fmt.Sprintf("raftlock: %s %s (token %d) is no longer held by session %s: revoked, or freed by its max hold", r.space, r.name, r.token, s.id)})
	}
}

// RevokedGrant is one grant a revoke took away.
type RevokedGrant struct {
	SessionID    string `json:"session_id"`
	FencingToken int64  `json:"fencing_token"`
}

// RevokeOption configures Revoke.
type RevokeOption func(*revokeOptions)

type revokeOptions struct {
	sessionID string
	semaphore bool
}

// RevokeSession revokes only this session's grant (default: every grant of the name).
func RevokeSession(id string) RevokeOption { return func(o *revokeOptions) { o.sessionID = id } }

// RevokeSemaphore revokes permits of the semaphore name (default: the lock name).
func RevokeSemaphore() RevokeOption { return func(o *revokeOptions) { o.semaphore = true } }

// Revoke (the admin right) takes the grants of lock name away at once and without
// lock-delay — that session's (RevokeSession) or every one; the next waiter gets a
// larger token. It returns the grants taken away; ErrNotHolder when the given session
// holds none. The holder's session lives on and learns it from its next keepalive.
func (c *Client) Revoke(ctx context.Context, name string, opts ...RevokeOption) ([]RevokedGrant, error) {
	var o revokeOptions
	for _, f := range opts {
		f(&o)
	}
	body := map[string]interface{}{}
	if o.sessionID != "" {
		body["session_id"] = o.sessionID
	}
	path := lockPath(name, "revoke")
	if o.semaphore {
		path = semaphorePath(name, "revoke")
	}
	a, err := c.do(ctx, call{method: "POST", path: path, body: fixed(body), mode: modeKeyed, key: newKey()})
	if err != nil {
		return nil, err
	}
	var r struct {
		Revoked *[]RevokedGrant `json:"revoked"`
	}
	if err := decode(a, "revoke "+name, &r); err != nil {
		return nil, err
	}
	if r.Revoked == nil {
		return nil, &Error{Code: "bad_response", Endpoint: a.endpoint, Message: a.endpoint + ": revoke " + name + `: no "revoked" list`}
	}
	return *r.Revoked, nil
}
