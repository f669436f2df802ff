package raftlock

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"
	"time"
)

// One logical REST call, retried across endpoints until it gets a definitive answer or
// its budget runs out. What makes a retry safe is declared per call:
//   - modeRead: no effect, retry freely;
//   - modeRenewal: keepalive/renew, repeating one only renews again;
//   - modeKeyed: a change; every attempt carries the SAME Idempotency-Key, so the server
//     applies it at most once and a retry returns the first answer.
// A connection that never opened means nothing was sent. An attempt that timed out or
// broke after sending, a 504 or a 502 has an unknown outcome: if the budget runs out the
// caller gets ErrOutcomeUnknown, never "unavailable". 503 and 429 said "nothing applied,
// try later": that endpoint rests for its Retry-After and the next one is tried.

// leaderHeader names the leader in every answer (docs/api.md "Leader hint").
const leaderHeader = "X-Raftlock-Leader"

type retryMode int

const (
	modeRead retryMode = iota
	modeRenewal
	modeKeyed
)

const (
	// minAttempt: retries with less time than this left are not started.
	minAttempt = 25 * time.Millisecond
	// maxBody: the largest legal answer is far below this.
	maxBody = 32 << 20
)

type call struct {
	method string
	// path with every dynamic segment already escaped
	path string
	// body gets the time elapsed since the call began (acquire shrinks wait_ms)
	body func(elapsed time.Duration) map[string]interface{}
	mode retryMode
	key  string
	// wait is how long the server may legitimately hold the answer (wait_ms)
	wait time.Duration
	// deadline for the whole call; zero: now + retry budget + wait
	deadline time.Time
}

type answer struct {
	status   int
	body     []byte
	endpoint string
	// sentAt: when the answered attempt was sent or, for a keyed call, when its FIRST
	// attempt was sent (a retry may return the first attempt's stored answer, whose
	// effect dates from then). Carries Go's monotonic clock reading.
	sentAt time.Time
}

type attemptKind int

const (
	attemptAnswer attemptKind = iota
	attemptNotSent
	attemptUnknown
)

func (c *Client) do(ctx context.Context, cl call) (*answer, error) {
	start := time.Now()
	deadline := cl.deadline
	if deadline.IsZero() {
		deadline = start.Add(c.retryBudget + cl.wait)
	}
	outcomeUnknown := false
	var last *Error
	var firstSent time.Time
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Only the endpoint changes with leader routing: what a failure means, and whether
		// the call may be repeated, stays exactly as below (the same rules on any node).
		u, rest := c.eps.pick(c.leaderRouting)
		remaining := time.Until(deadline)
		if remaining <= 0 && attempt > 0 {
			break
		}
		if rest > 0 {
			// Honour the rest the endpoints asked for. A lease renewal must get its last
			// tries in before the proof runs out, so it never sleeps more than half of what
			// is left; any other call gives up when asked to wait past its budget.
			switch {
			case cl.mode == modeRenewal:
				if rest > remaining/2 {
					rest = remaining / 2
				}
			case attempt > 0 && rest >= remaining:
				return nil, c.giveUp(cl, last, outcomeUnknown)
			case rest > remaining-minAttempt:
				rest = remaining - minAttempt
			}
			if err := sleepCtx(ctx, rest); err != nil {
				return nil, err
			}
		}
		if attempt > 0 && time.Until(deadline) < minAttempt {
			break
		}
		if firstSent.IsZero() {
			firstSent = time.Now()
		}
		a, kind, retryAfter, err := c.attempt(ctx, u, cl, start, deadline)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if kind == attemptAnswer {
			// 408: the server's HTTP layer did not receive the request whole and never ran it.
			// It says nothing of an earlier attempt, so it is no definite answer: retry, as 503.
			if a.status < 500 && a.status != 429 && a.status != 408 {
				c.eps.succeeded(u)
				if cl.mode == modeKeyed {
					a.sentAt = firstSent
				}
				if a.status >= 200 && a.status < 300 {
					return a, nil
				}
				// a definite answer, never retried (422 idempotency_key_reused included)
				e := errorFromResponse(a.status, a.body, u)
				if e.Code == "idempotency_key_reused" {
					e.IdempotencyKey = cl.key
				}
				return nil, e
			}
			e := errorFromResponse(a.status, a.body, u)
			switch a.status {
			case 503, 429:
				c.eps.retryAfter(u, parseRetryAfter(retryAfter, time.Second, time.Now()))
			case 408:
				c.eps.retryAfter(u, 50*time.Millisecond) // the request did not get through: send it again
			case 504, 502:
				outcomeUnknown = true
				c.eps.retryAfter(u, 50*time.Millisecond) // the server already waited; do not spin
			default:
				return nil, e // 500 and friends: a server bug; repeating it would only hide it
			}
			last = e
		} else {
			if kind == attemptUnknown {
				outcomeUnknown = true
			}
			c.eps.connectFailed(u, 0.5+c.random())
			last = err
		}
		if !time.Now().Before(deadline) {
			break
		}
	}
	return nil, c.giveUp(cl, last, outcomeUnknown)
}

func (c *Client) giveUp(cl call, last *Error, outcomeUnknown bool) error {
	what := cl.method + " " + unescapeForMessage(cl.path)
	why := "no attempt could be made"
	e := &Error{}
	if last != nil {
		why = last.Message
		e.Endpoint, e.Status, e.Err = last.Endpoint, last.Status, last
	}
	switch {
	case outcomeUnknown && cl.mode == modeKeyed:
		e.Code = "timeout"
		e.IdempotencyKey = cl.key
		e.Message = fmt.Sprintf("raftlock: %s: outcome unknown after retrying (%s); retrying with Idempotency-Key %s is safe", what, why, cl.key)
	case last != nil && last.Code == "too_many_requests":
		e.Code = "too_many_requests"
		e.Message = fmt.Sprintf("raftlock: %s: %s", what, why)
	default:
		e.Code = "unavailable"
		e.Message = fmt.Sprintf("raftlock: %s: no endpoint gave an answer in time (last: %s)", what, why)
	}
	return e
}

func (c *Client) attempt(ctx context.Context, u string, cl call, start, deadline time.Time) (*answer, attemptKind, string, *Error) {
	sentAt := time.Now()
	attemptDur := c.requestTimeout + cl.wait
	if left := deadline.Sub(sentAt); left < attemptDur {
		attemptDur = left
	}
	if attemptDur < time.Millisecond {
		attemptDur = time.Millisecond
	}
	actx, cancel := context.WithTimeout(ctx, attemptDur)
	defer cancel()
	var body io.Reader
	if cl.body != nil {
		b, err := json.Marshal(cl.body(sentAt.Sub(start)))
		if err != nil {
			return nil, attemptNotSent, "", &Error{Code: "invalid_request", Endpoint: u, Message: "raftlock: cannot encode the request: " + err.Error()}
		}
		body = bytes.NewReader(b)
	}
	// Whether any byte of the request was written: a connection that failed before
	// (refused, a TLS handshake that timed out or refused a certificate) sent nothing.
	var wrote int32
	actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{WroteHeaders: func() { atomic.StoreInt32(&wrote, 1) }})
	req, err := http.NewRequestWithContext(actx, cl.method, u+cl.path, body)
	if err != nil {
		return nil, attemptNotSent, "", &Error{Code: "invalid_request", Endpoint: u, Message: "raftlock: " + err.Error()}
	}
	req.Header.Set("User-Agent", "raftlock-client-go")
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if cl.key != "" {
		req.Header.Set("Idempotency-Key", cl.key)
	}
	res, err := c.httpc.Do(req)
	if err != nil {
		kind := attemptNotSent
		if atomic.LoadInt32(&wrote) != 0 {
			kind = classify(err)
		}
		return nil, kind, "", &Error{Code: "unavailable", Endpoint: u, Message: u + ": " + describeNetErr(err, attemptDur), Err: err}
	}
	defer res.Body.Close()
	if c.leaderRouting {
		c.eps.noteLeader(res.Header.Get(leaderHeader))
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil {
		return nil, attemptUnknown, "", &Error{Code: "unavailable", Endpoint: u, Message: u + ": " + describeNetErr(err, attemptDur), Err: err}
	}
	if len(data) > maxBody {
		return nil, attemptUnknown, "", &Error{Code: "bad_response", Endpoint: u, Status: res.StatusCode, Message: fmt.Sprintf("%s: answer body over %d bytes", u, maxBody)}
	}
	return &answer{status: res.StatusCode, body: data, endpoint: u, sentAt: sentAt}, attemptAnswer, res.Header.Get("Retry-After"), nil
}

// classify: a connection that never opened (refused, unreachable, a TLS certificate
// refused) sent nothing; anything after that may have reached the server.
func classify(err error) attemptKind {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return attemptNotSent
	}
	var dns *net.DNSError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	var rh tls.RecordHeaderError
	if errors.As(err, &dns) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &rh) {
		return attemptNotSent
	}
	return attemptUnknown
}

func describeNetErr(err error, attemptDur time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %v", attemptDur.Round(time.Millisecond))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

func unescapeForMessage(p string) string {
	if s, err := url.PathUnescape(p); err == nil {
		return s
	}
	return p
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// decode parses a 2xx answer into v; a malformed answer is ErrInvalidRequest (bad_response).
func decode(a *answer, what string, v interface{}) error {
	if err := json.Unmarshal(a.body, v); err != nil {
		return &Error{Code: "bad_response", Status: a.status, Endpoint: a.endpoint, Message: fmt.Sprintf("%s: unexpected answer to %s: %v", a.endpoint, what, err)}
	}
	return nil
}
