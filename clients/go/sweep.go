package raftlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Late grants (docs/client.md "An acquire that fails never leaves a grant behind"): an
// acquire that gives up without a definite "not applied" is followed by a cleanup release
// of its name in the session. The cluster may still apply a copy of that acquire AFTER the
// cleanup (a request a follower was still forwarding, a paused node that relays it
// seconds later). Nothing of this client knows that grant, and the keepalives would keep
// it held until the session ends. So each cleanup watches its name for a while, and after
// every keepalive whose answer lists the session's grants the session releases the grants
// of watched names that no grant object of it holds (sweepLate).

const (
	// watchFor is how long a cleaned-up name is watched: the server keeps an
	// Idempotency-Key this long, and a copy is most likely to come within seconds.
	watchFor = 10 * time.Minute
	// maxWatched bounds the watched names of one session; the earliest deadline goes first.
	maxWatched = 1024
)

// nameKey is a name in its space: "lock" (locks, elections, lock-set names) or "semaphore".
type nameKey struct{ space, name string }

// watchLocked watches k until now + watchFor (a re-watch extends it). s.mu is held.
func (s *Session) watchLocked(k nameKey, now time.Time) {
	if s.watched == nil {
		s.watched = map[nameKey]time.Time{}
	}
	if _, ok := s.watched[k]; !ok && len(s.watched) >= maxWatched {
		var first nameKey
		var at time.Time
		for w, until := range s.watched {
			if at.IsZero() || until.Before(at) {
				first, at = w, until
			}
		}
		delete(s.watched, first)
	}
	s.watched[k] = now.Add(watchFor)
}

// beginAcquire counts an acquire of names in space as in flight, so that no sweep
// releases what it may be granted, after waiting for every release of those names in
// flight (a cleanup's or the sweep's), so that no such release can take what it gets.
// end must be called once the acquire has tracked its grant, or gave up.
func (s *Session) beginAcquire(ctx context.Context, space string, names ...string) (end func(), err error) {
	for {
		s.mu.Lock()
		if s.state != stateOpen {
			err := s.err
			s.mu.Unlock()
			return nil, err
		}
		busy := s.releaseInFlightLocked(space, names)
		if busy == nil {
			if s.acquiring == nil {
				s.acquiring = map[nameKey]int{}
			}
			countLocked(s.acquiring, keysOf(space, names), 1)
			s.mu.Unlock()
			break
		}
		s.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err() // nothing was sent
		case <-s.done:
		}
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		countLocked(s.acquiring, keysOf(space, names), -1)
	}, nil
}

// keysOf is names in space.
func keysOf(space string, names []string) []nameKey {
	keys := make([]nameKey, len(names))
	for i, n := range names {
		keys[i] = nameKey{space, n}
	}
	return keys
}

// countLocked adds d to each key's count in m; a count that reaches 0 leaves m. s.mu is held.
func countLocked(m map[nameKey]int, keys []nameKey, d int) {
	for _, k := range keys {
		if m[k] += d; m[k] <= 0 {
			delete(m, k)
		}
	}
}

// releaseInFlightLocked is the done channel of a release in flight of one of names, or nil.
func (s *Session) releaseInFlightLocked(space string, names []string) chan struct{} {
	for _, n := range names {
		if ch := s.releases[nameKey{space, n}]; ch != nil {
			return ch
		}
	}
	return nil
}

// markReleasingLocked records a release of names in flight; the returned func ends it.
func (s *Session) markReleasingLocked(space string, names []string) func() {
	if s.releases == nil {
		s.releases = map[nameKey]chan struct{}{}
	}
	ch := make(chan struct{})
	for _, n := range names {
		s.releases[nameKey{space, n}] = ch
	}
	return func() {
		s.mu.Lock()
		for _, n := range names {
			if k := (nameKey{space, n}); s.releases[k] == ch {
				delete(s.releases, k)
			}
		}
		s.mu.Unlock()
		close(ch)
	}
}

// cleanUp runs release, the cleanup release of names after an acquire that gave up: it
// watches the names for a late grant, and new acquires of them wait until it is done.
// A cleanup of the same names already in flight (another acquire's) finishes first: a
// late copy of this acquire may follow that release.
func (s *Session) cleanUp(space string, names []string, release func()) {
	var done func()
	for done == nil {
		s.mu.Lock()
		busy := s.releaseInFlightLocked(space, names)
		if busy == nil {
			now := time.Now()
			for _, n := range names {
				s.watchLocked(nameKey{space, n}, now)
			}
			done = s.markReleasingLocked(space, names)
		}
		s.mu.Unlock()
		if busy != nil {
			<-busy
		}
	}
	defer done()
	release()
}

// lateGrant is a listed grant the sweep releases; done ends its release in flight.
type lateGrant struct {
	space string
	name  string
	token int64
	done  func()
}

// lateGrants picks the listed grants the sweep releases at now and marks their releases
// in flight: each is of a watched name, held by no grant object of the session (a lock by
// its token, a semaphore by any grant of the name), with no acquire or release of the name
// in flight. Expired watches are dropped.
func (s *Session) lateGrants(grants []keepaliveGrant, now time.Time) []lateGrant {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateOpen || len(s.watched) == 0 {
		return nil
	}
	for k, until := range s.watched {
		if !now.Before(until) {
			delete(s.watched, k)
		}
	}
	var out []lateGrant
	for _, g := range grants {
		space := g.space()
		k := nameKey{space, g.Name}
		if _, ok := s.watched[k]; !ok || s.acquiring[k] > 0 || s.releases[k] != nil || s.giving[k] > 0 || s.holdsLocked(k, g.FencingToken) {
			continue
		}
		out = append(out, lateGrant{space: space, name: g.Name, token: g.FencingToken, done: s.markReleasingLocked(space, []string{g.Name})})
	}
	return out
}

// givingBack stops judging refs (untrack) and counts their names' own release in flight
// until the returned func runs. Meanwhile the sweep leaves those names alone: a keepalive
// may still list the grant that release gives back, and a sweep release of the same token
// would make the owner's release answer ErrNotHolder.
func (s *Session) givingBack(refs ...*grantRef) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.giving == nil {
		s.giving = map[nameKey]int{}
	}
	var keys []nameKey
	for _, r := range refs {
		if r == nil {
			continue
		}
		delete(s.refs, r)
		keys = append(keys, nameKey{r.space, r.name})
	}
	countLocked(s.giving, keys, 1)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		countLocked(s.giving, keys, -1)
	}
}

// holdsLocked: does a grant object of the session hold k (a lock with token)?
func (s *Session) holdsLocked(k nameKey, token int64) bool {
	for r := range s.refs {
		if r.space == k.space && r.name == k.name && (k.space == "semaphore" || r.token == token) {
			return true
		}
	}
	return false
}

// sweepLate releases, after a keepalive that listed grants, the late grants among them
// (lateGrants). The releases run beside the keepalives, which they must not delay.
func (s *Session) sweepLate(grants []keepaliveGrant) {
	for _, g := range s.lateGrants(grants, time.Now()) {
		go s.releaseLate(g)
	}
}

// releaseLate releases one late grant: a lock by its listed token, which never touches
// another grant or a wait; a semaphore by name (no grant object of it exists). A failure
// other than "nothing held" is retried when the next keepalive lists the grant again.
func (s *Session) releaseLate(g lateGrant) {
	defer g.done()
	var err error
	if g.space == "semaphore" {
		err = s.c.releaseSemaphore(s.ctx, g.name, s.id, s.c.requestTimeout)
	} else {
		err = s.c.release(s.ctx, g.name, s.id, g.token, s.c.requestTimeout)
	}
	what := fmt.Sprintf("%s %s (token %d)", g.space, g.name, g.token)
	switch {
	case err == nil:
		s.c.warn(fmt.Sprintf("released %s in session %s: a late copy of an acquire that had given up was granted it", what, s.id), nil)
	case errors.Is(err, ErrNotHolder):
		// nothing left to release
	case errors.Is(err, ErrSessionNotFound):
		s.markLost(fmt.Sprintf("the server no longer knows session %s", s.id), err)
	case s.ctx.Err() != nil:
		// the session ended: closing it frees its grants
	default:
		s.c.warn(fmt.Sprintf("could not release %s, granted to session %s by a late copy of an acquire that had given up; retrying after the next keepalive", what, s.id), err)
	}
}
