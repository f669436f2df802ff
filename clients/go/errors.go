package raftlock

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Sentinel errors; match them with errors.Is. Every error the server or the retry logic
// produces is an *Error whose Is method maps its Code to one of these.
var (
	// ErrLocked: another session holds the lock (TryLock, or a wait that ran out).
	// The text is etcd's, so programs that print it read the same.
	ErrLocked = errors.New("mutex: Locked by another session")
	// ErrNotHolder: renew/release by a session that does not hold the lock, or a stale token.
	ErrNotHolder = errors.New("raftlock: not the holder of the lock")
	// ErrSessionNotFound: the server no longer knows the session (expired or closed).
	ErrSessionNotFound = errors.New("raftlock: session not found")
	// ErrUnavailable: no endpoint gave an answer within the retry budget; nothing was
	// applied — unless the error is also ErrOutcomeUnknown.
	ErrUnavailable = errors.New("raftlock: unavailable")
	// ErrTooManyRequests: a limit of the cluster was still reached when the budget ran out.
	ErrTooManyRequests = errors.New("raftlock: too many requests")
	// ErrOutcomeUnknown: a change was sent but never definitely answered; it may have been
	// applied. Retrying it with the same Idempotency-Key (Error.IdempotencyKey) is safe.
	ErrOutcomeUnknown = errors.New("raftlock: outcome unknown")
	// ErrInvalidRequest: the request is wrong (400/413/415) or the answer malformed.
	ErrInvalidRequest = errors.New("raftlock: invalid request")
	// ErrPermissionDenied: the bearer token is missing, unknown or lacks the right (401/403).
	ErrPermissionDenied = errors.New("raftlock: permission denied")
	// ErrSessionLost: the session's lease can no longer be proven, or it was closed.
	ErrSessionLost = errors.New("raftlock: session lost")
	// ErrSessionExpired is etcd concurrency's name for ErrSessionLost.
	ErrSessionExpired = ErrSessionLost
	// ErrLockLost: the lock can no longer be proven held.
	ErrLockLost = errors.New("raftlock: lock lost")
	// ErrSemaphoreFull: the semaphore had too few free permits and the wait (if any) ran
	// out (Error.InUse and Error.Limit say how full).
	ErrSemaphoreFull = errors.New("raftlock: semaphore full")
	// ErrLimitMismatch: the semaphore is busy under another limit (Error.Limit).
	ErrLimitMismatch = errors.New("raftlock: semaphore limit mismatch")
	// ErrCompacted: a watch resume point older than every endpoint keeps
	// (Error.CompactedIndex: a resume after it is possible).
	ErrCompacted = errors.New("raftlock: watch resume point compacted")
	// ErrIdempotencyKeyReused: the change's Idempotency-Key (Error.IdempotencyKey) was
	// first used for another request (another token, operation, name or body); the
	// server applied nothing. Never retried. This client draws a fresh key per change,
	// so seeing it means two changes were sent under one key.
	ErrIdempotencyKeyReused = errors.New("raftlock: idempotency key reused for another request")
	// ErrDeadlock: waiting would have closed a cycle of sessions waiting for each other
	// (docs/contract.md §5 "Deadlock detection"). The server refused the wait at once and
	// changed nothing; Error.Cycle names the cycle, this request's session first. Release
	// what you hold and try again, or take the locks together (LockSet).
	ErrDeadlock = errors.New("raftlock: deadlock")
)

// DeadlockStep is one step of a deadlock's cycle: SessionID waits on Name for the next
// step's session (Kind "semaphore" when Name is a semaphore's, else empty).
type DeadlockStep struct {
	SessionID string `json:"session_id"`
	Name      string `json:"name"`
	Kind      string `json:"kind,omitempty"`
}

// BlockedLock is one lock that kept a lock set from being granted, with its exclusive
// holder when it has one (docs/contract.md §5 "Lock sets").
type BlockedLock struct {
	Name   string  `json:"name"`
	Holder *Holder `json:"holder,omitempty"`
}

// Holder is the holder of a lock, as a lock_held answer names it.
type Holder struct {
	SessionID    string `json:"session_id"`
	Owner        string `json:"owner"`
	FencingToken int64  `json:"fencing_token"`
}

// Error is every error of this package that is not a context error. Code is the
// contract's code (docs/contract.md "Errors"), Status the HTTP status when the server
// answered, Endpoint the API URL that produced it.
type Error struct {
	Code     string
	Status   int
	Endpoint string
	Message  string
	// Holder is set for lock_held when the server named the holder.
	Holder *Holder
	// IdempotencyKey is set for ErrOutcomeUnknown (retry with it) and for
	// ErrIdempotencyKeyReused (the key that was refused).
	IdempotencyKey string
	// Leader is set for lock_held on a campaign: the election's leader (nil while none
	// leads, or when the answer did not say).
	Leader *LeaderInfo
	// InUse and Limit are set for semaphore_full (both) and limit_mismatch (Limit).
	InUse, Limit int
	// CompactedIndex is set for compacted.
	CompactedIndex uint64
	// Blocked is set for lock_held of a lock set: each lock that kept it from being granted.
	Blocked []BlockedLock
	// Cycle is set for deadlock: each session on the cycle with the name it waits on.
	Cycle []DeadlockStep
	// Err is the cause (the last attempt's error when retries ran out).
	Err error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is maps the contract's code to the sentinel errors.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrLocked:
		return e.Code == "lock_held"
	case ErrNotHolder:
		return e.Code == "not_holder"
	case ErrSessionNotFound:
		return e.Code == "session_not_found"
	case ErrUnavailable:
		return e.Code == "unavailable" || e.Code == "too_many_requests" || e.Code == "timeout" || e.Code == "request_timeout"
	case ErrTooManyRequests:
		return e.Code == "too_many_requests"
	case ErrOutcomeUnknown:
		return e.Code == "timeout"
	case ErrInvalidRequest:
		return e.Code == "invalid_request" || e.Code == "payload_too_large" || e.Code == "unsupported_media_type" || e.Code == "bad_response"
	case ErrPermissionDenied:
		return e.Code == "unauthenticated" || e.Code == "permission_denied"
	case ErrSessionLost:
		return e.Code == "session_lost"
	case ErrLockLost:
		return e.Code == "lock_lost"
	case ErrSemaphoreFull:
		return e.Code == "semaphore_full"
	case ErrLimitMismatch:
		return e.Code == "limit_mismatch"
	case ErrCompacted:
		return e.Code == "compacted"
	case ErrIdempotencyKeyReused:
		return e.Code == "idempotency_key_reused"
	case ErrDeadlock:
		return e.Code == "deadlock"
	}
	return false
}

// definitelyNotApplied: the server answered that the change was not applied (a 4xx, or
// a 503/429 with no earlier attempt of unknown outcome). Anything else — a context
// error, ErrOutcomeUnknown, a 500, a malformed answer — may hide an applied change.
func definitelyNotApplied(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	if e.Code == "timeout" {
		return false
	}
	if e.Status >= 400 && e.Status < 500 {
		return true
	}
	return e.Code == "unavailable" || e.Code == "too_many_requests"
}

// errorFromResponse maps one error answer {"error":{"code","message",…}} to an *Error.
// A body that cannot be parsed still gives an *Error naming the status.
func errorFromResponse(status int, body []byte, endpoint string) *Error {
	var parsed struct {
		Error struct {
			Code    string          `json:"code"`
			Message string          `json:"message"`
			Holder  json.RawMessage `json:"holder"`
			Leader  json.RawMessage `json:"leader"`
			InUse   int             `json:"in_use"`
			Limit   int             `json:"limit"`
			// compacted_index may sit in the error object or beside it
			CompactedIndex uint64          `json:"compacted_index"`
			Blocked        json.RawMessage `json:"blocked"`
			Cycle          json.RawMessage `json:"cycle"`
		} `json:"error"`
		CompactedIndex uint64 `json:"compacted_index"`
	}
	_ = json.Unmarshal(body, &parsed)
	code := parsed.Error.Code
	if code == "" {
		code = statusCode(status)
	}
	msg := parsed.Error.Message
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d", status)
	}
	e := &Error{Code: code, Status: status, Endpoint: endpoint, Message: endpoint + ": " + msg}
	if code == "lock_held" && len(parsed.Error.Holder) > 0 {
		var h Holder
		if json.Unmarshal(parsed.Error.Holder, &h) == nil && h.SessionID != "" {
			e.Holder = &h
		}
	}
	if code == "lock_held" && len(parsed.Error.Leader) > 0 {
		var l LeaderInfo
		if json.Unmarshal(parsed.Error.Leader, &l) == nil && l.SessionID != "" {
			e.Leader = &l
		}
	}
	if code == "lock_held" && len(parsed.Error.Blocked) > 0 {
		var b []BlockedLock
		if json.Unmarshal(parsed.Error.Blocked, &b) == nil {
			e.Blocked = b
		}
	}
	if code == "deadlock" && len(parsed.Error.Cycle) > 0 {
		var c []DeadlockStep
		if json.Unmarshal(parsed.Error.Cycle, &c) == nil {
			e.Cycle = c
		}
	}
	e.InUse, e.Limit = parsed.Error.InUse, parsed.Error.Limit
	e.CompactedIndex = parsed.Error.CompactedIndex
	if e.CompactedIndex == 0 {
		e.CompactedIndex = parsed.CompactedIndex
	}
	return e
}

// statusCode is the code to assume when an error answer has no parsable body.
func statusCode(status int) string {
	switch status {
	case 400:
		return "invalid_request"
	case 401:
		return "unauthenticated"
	case 403:
		return "permission_denied"
	case 404:
		return "not_found"
	case 408:
		return "request_timeout"
	case 413:
		return "payload_too_large"
	case 415:
		return "unsupported_media_type"
	case 429:
		return "too_many_requests"
	case 503:
		return "unavailable"
	case 504:
		return "timeout"
	}
	if status >= 500 {
		return "internal"
	}
	return "unexpected_status"
}
