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

// asking is one acquire of the session (docs/client.md "Acquires and releases of one name
// at once"). A second acquire of a name the session holds returns the same grant, so a
// release of the name in this session that starts while a request of it is out (another
// grant object's release, a given-up acquire's cleanup) may be applied after it and end
// the grant its answer describes. Such a release sets overtaken (under s.mu); the answer is
// then not handed out and the acquire asks again once the release is done. outstanding is
// the acquire's own: an overtaken answer may still have left a grant standing (the release
// was applied first), so giving up before the next answer cleans up (acquireLoop).
type asking struct {
	keys        []nameKey
	overtaken   bool
	outstanding bool
}

// releaseOut is the releases of one name in flight in the session; done is closed when
// the last of them ends.
type releaseOut struct {
	n    int
	done chan struct{}
}

// beginAcquire counts an acquire of names in space as in flight, so that no sweep
// releases what it may be granted, and registers it for the releases of those names
// (asking). Each send waits for those releases first (sendable). end must be called once
// the acquire has tracked its grant, or gave up.
func (s *Session) beginAcquire(ctx context.Context, space string, names ...string) (h *asking, end func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateOpen {
		return nil, nil, s.err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err // nothing was sent
	}
	if s.acquiring == nil {
		s.acquiring = map[nameKey]int{}
	}
	if s.asks == nil {
		s.asks = map[nameKey]map[*asking]struct{}{}
	}
	h = &asking{keys: keysOf(space, names)}
	countLocked(s.acquiring, h.keys, 1)
	for _, k := range h.keys {
		if s.asks[k] == nil {
			s.asks[k] = map[*asking]struct{}{}
		}
		s.asks[k][h] = struct{}{}
	}
	return h, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		countLocked(s.acquiring, h.keys, -1)
		for _, k := range h.keys {
			delete(s.asks[k], h)
			if len(s.asks[k]) == 0 {
				delete(s.asks, k)
			}
		}
	}, nil
}

// sendable waits until no release of h's names is in flight in the session, then clears
// h.overtaken under the session's lock: a release that starts after it marks this send.
func (s *Session) sendable(ctx context.Context, h *asking) error {
	for {
		s.mu.Lock()
		if s.state != stateOpen {
			err := s.err
			s.mu.Unlock()
			return err
		}
		busy := s.releaseInFlightLocked(h.keys)
		if busy == nil {
			h.overtaken = false
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
		}
	}
}

// answerStands: was h's last answer given before any release of its names started?
func (s *Session) answerStands(h *asking) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.overtaken {
		h.outstanding = true
	}
	return !h.overtaken
}

// trackAnswered tracks refs, the grants of h's last answer, unless a release of its names
// started while it was out (then it reports false and tracks nothing: ask again). One
// step under the session's lock, so a release starting later finds refs and ends them.
func (s *Session) trackAnswered(h *asking, refs ...*grantRef) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.overtaken {
		h.outstanding = true
		return false
	}
	if s.refs == nil {
		s.refs = map[*grantRef]struct{}{}
	}
	for _, r := range refs {
		s.refs[r] = struct{}{}
	}
	return true
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

// releaseInFlightLocked is the done channel of the releases in flight of one of keys, or nil.
func (s *Session) releaseInFlightLocked(keys []nameKey) chan struct{} {
	for _, k := range keys {
		if r := s.releases[k]; r != nil {
			return r.done
		}
	}
	return nil
}

// startReleaseLocked records a release of keys starting now: the acquires of those names
// out now are overtaken by it, and new sends wait until the returned func (call it once)
// ends it. s.mu is held.
func (s *Session) startReleaseLocked(keys []nameKey) func() {
	if s.releases == nil {
		s.releases = map[nameKey]*releaseOut{}
	}
	for _, k := range keys {
		for a := range s.asks[k] {
			a.overtaken = true
		}
		r := s.releases[k]
		if r == nil {
			r = &releaseOut{done: make(chan struct{})}
			s.releases[k] = r
		}
		r.n++
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, k := range keys {
			if r := s.releases[k]; r != nil {
				if r.n--; r.n == 0 {
					close(r.done)
					delete(s.releases, k)
				}
			}
		}
	}
}

// dropLocked stops judging every grant object of the session in keys that a release
// ends (token 0: every grant of the names; else the grant of that token), except those
// of except, and returns them: the caller runs releasedLost on them after unlocking s.mu.
func (s *Session) dropLocked(keys []nameKey, token int64, except []*grantRef) []*grantRef {
	var gone []*grantRef
	for r := range s.refs {
		if (token != 0 && r.token != token) || !containsKey(keys, nameKey{r.space, r.name}) || containsRef(except, r) {
			continue
		}
		delete(s.refs, r)
		gone = append(gone, r)
	}
	return gone
}

// releasedLost ends grant objects whose grant a release of the session ends (dropLocked).
func (s *Session) releasedLost(gone []*grantRef) {
	for _, r := range gone {
		r.lost(&Error{Code: "lock_lost", Message: fmt.Sprintf("raftlock: %s %s (token %d) was released in session %s", r.space, r.name, r.token, s.id)})
	}
}

func containsKey(keys []nameKey, k nameKey) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

func containsRef(refs []*grantRef, r *grantRef) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

// cleanUp runs release, the cleanup release of names after an acquire that gave up: it
// watches the names for a late grant, and new acquires of them wait until it is done.
// A cleanup of the same names already in flight (another acquire's) finishes first: a
// late copy of this acquire may follow that release.
//
// The release has no token: it ends whatever the session holds of the names, so every
// grant object of them is lost from now (docs/client.md "Acquires and releases of one name
// at once").
func (s *Session) cleanUp(space string, names []string, release func()) {
	keys := keysOf(space, names)
	var done func()
	var gone []*grantRef
	for done == nil {
		s.mu.Lock()
		busy := s.releaseInFlightLocked(keys)
		if busy == nil {
			now := time.Now()
			for _, k := range keys {
				s.watchLocked(k, now)
			}
			done = s.startReleaseLocked(keys)
			gone = s.dropLocked(keys, 0, nil)
		}
		s.mu.Unlock()
		if busy != nil {
			<-busy
		}
	}
	defer done()
	s.releasedLost(gone)
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
		if _, ok := s.watched[k]; !ok || s.acquiring[k] > 0 || s.releases[k] != nil || s.holdsLocked(k, g.FencingToken) {
			continue
		}
		out = append(out, lateGrant{space: space, name: g.Name, token: g.FencingToken, done: s.startReleaseLocked([]nameKey{k})})
	}
	return out
}

// givingBack starts a grant object's own release of names in space (token 0: a release
// that ends every grant of the names in the session, as a semaphore's, a resign, a
// release-all; else the grant of that token). It stops judging refs (untrack), ends every
// other grant object that carries a grant the release ends, overtakes the acquires of the
// names out now and holds new sends back (startReleaseLocked), until the returned func
// ends the release. Meanwhile the sweep leaves those names alone too: a
// keepalive may still list the grant that release gives back, and a sweep release of the
// same token would make the owner's release answer ErrNotHolder.
func (s *Session) givingBack(space string, names []string, token int64, refs ...*grantRef) func() {
	keys := keysOf(space, names)
	s.mu.Lock()
	for _, r := range refs {
		delete(s.refs, r)
	}
	ended := s.startReleaseLocked(keys)
	gone := s.dropLocked(keys, token, refs)
	s.mu.Unlock()
	s.releasedLost(gone)
	return ended
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
