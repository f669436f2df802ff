package raftlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// acquireLoop is the acquire of every grant kind (a lock, a semaphore's permits, a
// campaign): it waits in the FIFO queue until granted, ctx is done or the session ends,
// re-queueing waits longer than the contract's 300 s (full: the error a wait that ran
// out gives, ErrLocked or ErrSemaphoreFull). An acquire that ends without a definite "not
// applied" calls forget, which must give the name up in this session: the grant may have
// raced the give-up (docs/client.md). what names the grant in errors. It returns the
// send time of the granted request, after renewing the session's proof from it. Each send
// waits for the releases of h's names in flight in the session (sendable). take tracks a
// grant (with trackAnswered or answerStands), given its send time; false means a release
// of the names overtook the answer (asking), and the acquire asks again.
func (s *Session) acquireLoop(ctx context.Context, h *asking, wait bool, full error, what string,
	call func(ctx context.Context, chunk time.Duration) (time.Time, error), forget func(cause error), take func(sentAt time.Time) bool) (time.Time, error) {
	if err := s.assertOpen(); err != nil {
		return time.Time{}, err // a lost or closed session frees whatever it held
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, err // nothing was sent
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
		if err := s.sendable(actx, h); err != nil {
			// nothing of this send went out; an overtaken answer before it may have left a
			// grant standing
			if h.outstanding && s.assertOpen() == nil {
				forget(err)
			}
			if serr := s.assertOpen(); serr != nil {
				return time.Time{}, serr
			}
			if ctx.Err() != nil {
				return time.Time{}, ctx.Err()
			}
			return time.Time{}, err
		}
		sent := time.Now()
		sentAt, err := call(actx, chunk)
		if err != nil {
			if errors.Is(err, ErrSessionNotFound) {
				s.markLost(fmt.Sprintf("the server no longer knows session %s", s.id), err)
			}
			if errors.Is(err, full) {
				h.outstanding = false // the session holds none of the names
			}
			if wait && chunk > time.Millisecond && errors.Is(err, full) && actx.Err() == nil && waitRanOut(time.Since(sent), chunk) {
				continue // this wait ran out before ctx: queue again
			}
			if !definitelyNotApplied(err) || h.outstanding {
				forget(err)
			}
			if actx.Err() != nil && ctx.Err() == nil {
				if serr := s.assertOpen(); serr != nil {
					return time.Time{}, serr // the session ended while we waited
				}
			}
			if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
				return time.Time{}, ctx.Err()
			}
			return time.Time{}, err
		}
		h.outstanding = false // a grant: take tracks it, or finds it overtaken again
		// A granted acquire renewed the session from its arrival, no earlier than its send.
		s.noteAck(sentAt)
		if serr := s.assertOpen(); serr != nil {
			return time.Time{}, serr // lost meanwhile: closing a lost session frees the grant
		}
		if !s.isProven() {
			// Granted after a wait whose only proof is older than the lease: holding it
			// cannot be proven, so it is not claimed. (Keepalives normally prevent this.)
			forget(nil)
			return time.Time{}, &Error{Code: "lock_lost", Message: fmt.Sprintf("raftlock: %s was granted but session %s could not be proven alive", what, s.id)}
		}
		if take(sentAt) {
			return sentAt, nil
		}
		// a release of the names in this session overtook the answer: ask again
	}
}

// waitRanOut reports whether a wait the server refused (ErrLocked, ErrSemaphoreFull) ran
// its chunk out. The server ends a wait no earlier than its wait_ms after the request
// arrived, so a refusal that comes sooner was not a timeout: the request could not wait at
// all (a share is never upgraded, a wait of the session it may not join) or its wait was
// withdrawn. Asking again would get the same answer at once, in a loop for the rest of
// ctx, so only a wait that ran out is queued again. The slack covers clock ticks.
func waitRanOut(elapsed, chunk time.Duration) bool {
	slack := chunk / 100
	if slack < 5*time.Millisecond {
		slack = 5 * time.Millisecond
	}
	return elapsed >= chunk-slack
}

// holdDeadline is the client clock until which a grant made after sentAt cannot have
// been freed by its max hold: sentAt + maxHold − margin (the zero time: no max hold).
func (s *Session) holdDeadline(sentAt time.Time, maxHold time.Duration) time.Time {
	if maxHold <= 0 {
		return time.Time{}
	}
	return sentAt.Add(maxHold - s.margin)
}

// grantHoldDeadline is holdDeadline bounded also by the server's word on the grant: left
// is the answer's max_hold_ms (nil: absent), at most how much longer the grant lasts,
// counted from the send. A re-acquire that returns a grant an earlier request of the
// session made (one given up on, delivered late) keeps that request's max hold, which
// this client may never have seen (docs/contract.md §4 "Revocation and maximum hold").
func (s *Session) grantHoldDeadline(sentAt time.Time, maxHold time.Duration, left *int64) time.Time {
	d := s.holdDeadline(sentAt, maxHold)
	if left != nil {
		d = earliest(d, sentAt.Add(time.Duration(*left)*time.Millisecond-s.margin))
	}
	return d
}

// earliest of two deadlines, the zero time meaning none
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func validMaxHold(d time.Duration) error {
	if d != 0 && (d < 100*time.Millisecond || d.Milliseconds() > 2147483647) {
		return &Error{Code: "invalid_request", Message: fmt.Sprintf("raftlock: max hold must be between 100ms and 2147483647ms, got %v", d)}
	}
	return nil
}

// grantCall is one request of acquireLoop for a grant kind that names an owner and a max
// hold (a semaphore acquire, a campaign): base gains "owner" and "max_hold_ms" when set,
// the answer is decoded into out, and token (read from out) must be positive. It returns
// the request's send time. what names the request in errors ("campaign NAME").
func (s *Session) grantCall(ctx context.Context, path string, base map[string]interface{}, owner string, maxHold, chunk time.Duration, what string, out interface{}, token func() int64) (time.Time, error) {
	if owner != "" {
		base["owner"] = owner
	}
	if maxHold > 0 {
		base["max_hold_ms"] = maxHold.Milliseconds()
	}
	a, err := s.c.waitingCall(ctx, path, base, chunk)
	if err != nil {
		return time.Time{}, err
	}
	if err := decode(a, what, out); err != nil {
		return time.Time{}, err
	}
	if token() <= 0 {
		return time.Time{}, &Error{Code: "bad_response", Endpoint: a.endpoint, Message: a.endpoint + ": " + what + ": answer without a positive fencing_token"}
	}
	return a.sentAt, nil
}
