package raftlock

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Watch (docs/contract.md §4 "Watch"): GET /v1/watch as server-sent events, one per
// applied change of a lock, semaphore or election, in log order and the same on every
// node. A Watcher reconnects to another endpoint when a node fails and resumes without
// losing or repeating an event: it remembers the index of the last event it gave and how
// many events of that index it gave (one command's events share an index, and a cut can
// fall between them), resumes after the index before, and skips the ones already given.
// A resume point no endpoint keeps any more ends it with ErrCompacted.

// WatchEvent is one event of the feed: the contract's `data` plus its `event` name.
// Event "state" (one per current holder) opens a stream started without a from-index,
// and Event "synced" marks the end of those (Index: the state's index).
type WatchEvent struct {
	Event        string `json:"-"`
	Kind         string `json:"kind"` // lock, semaphore or election
	Name         string `json:"name"`
	SessionID    string `json:"session_id,omitempty"`
	FencingToken int64  `json:"fencing_token,omitempty"`
	Value        string `json:"value,omitempty"`
	Mode         string `json:"mode,omitempty"`
	Permits      int    `json:"permits,omitempty"`
	Limit        int    `json:"limit,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Index        uint64 `json:"index"`
}

// WatchOption configures Watch.
type WatchOption func(*watchOptions)

type watchOptions struct {
	fromIndex uint64
	hasFrom   bool
	idle      time.Duration
}

// WithFromIndex resumes after log index i (without it the stream opens with the state).
func WithFromIndex(i uint64) WatchOption {
	return func(o *watchOptions) { o.fromIndex, o.hasFrom = i, true }
}

// WithIdleTimeout: a stream silent this long (no event, no keepalive comment) is taken
// as dead and reopened elsewhere (default 45 s; the server comments every 15 s).
func WithIdleTimeout(d time.Duration) WatchOption {
	return func(o *watchOptions) { o.idle = d }
}

const (
	watchConnectTimeout = 5 * time.Second
	watchMaxFrame       = 1 << 20
)

// Watcher is a running watch. Read Events until it is closed, then Err says why.
type Watcher struct {
	ch   chan WatchEvent
	done chan struct{}
	err  error
}

// Events delivers the feed; it is closed when ctx is done or the watch fails.
func (w *Watcher) Events() <-chan WatchEvent { return w.ch }

// Err is why Events was closed (ctx.Err(), ErrCompacted, ErrPermissionDenied, …); nil
// before that.
func (w *Watcher) Err() error {
	select {
	case <-w.done:
		return w.err
	default:
		return nil
	}
}

// Watch follows every lock, semaphore and election whose name starts with prefix.
func (c *Client) Watch(ctx context.Context, prefix string, opts ...WatchOption) *Watcher {
	var o watchOptions
	for _, f := range opts {
		f(&o)
	}
	w := &Watcher{ch: make(chan WatchEvent), done: make(chan struct{})}
	go func() {
		err := c.watchLoop(ctx, prefix, o, func(batch []WatchEvent) bool {
			for _, e := range batch {
				select {
				case w.ch <- e:
				case <-ctx.Done():
					return false
				}
			}
			return true
		})
		w.err = err
		close(w.done)
		close(w.ch)
	}()
	return w
}

// Observer follows an election's leader.
type Observer struct {
	ch   chan *LeaderInfo
	done chan struct{}
	err  error
}

// Leaders delivers the leader each time it changes (nil: nobody leads), first the
// current one; it is closed when ctx is done or the watch fails.
func (o *Observer) Leaders() <-chan *LeaderInfo { return o.ch }

// Err: as Watcher.Err.
func (o *Observer) Err() error {
	select {
	case <-o.done:
		return o.err
	default:
		return nil
	}
}

// Observe follows election name's leader, built on Watch(name): one step per command, so
// a resign and the next candidate's win (one index) give the new leader, never a nil in
// between.
func (c *Client) Observe(ctx context.Context, name string) *Observer {
	ob := &Observer{ch: make(chan *LeaderInfo), done: make(chan struct{})}
	var leader *LeaderInfo
	given, synced, hasAt := "", false, false
	var at uint64
	key := func(l *LeaderInfo) string {
		if l == nil {
			return "null"
		}
		return fmt.Sprintf("%s\x00%d\x00%s", l.SessionID, l.FencingToken, l.Value)
	}
	step := func(out []*LeaderInfo) []*LeaderInfo {
		if !synced || key(leader) == given {
			return out
		}
		given = key(leader)
		if leader == nil {
			return append(out, nil)
		}
		cp := *leader
		return append(out, &cp)
	}
	go func() {
		err := c.watchLoop(ctx, name, watchOptions{}, func(batch []WatchEvent) bool {
			var out []*LeaderInfo
			for _, e := range batch {
				if e.Event == "synced" {
					synced = true
					continue
				}
				if e.Kind != "election" || e.Name != name {
					continue
				}
				if e.Event != "state" && hasAt && e.Index != at {
					out = step(out)
				}
				at, hasAt = e.Index, true
				switch e.Event {
				case "state", "acquired":
					leader = &LeaderInfo{SessionID: e.SessionID, Value: e.Value, FencingToken: e.FencingToken, Index: e.Index}
				case "proclaimed":
					if leader != nil && (e.SessionID == "" || e.SessionID == leader.SessionID) {
						l := *leader
						l.Value, l.Index = e.Value, e.Index
						leader = &l
					}
				case "resigned", "released", "expired", "revoked":
					if leader != nil && (e.SessionID == "" || e.SessionID == leader.SessionID) {
						leader = nil
					}
				}
			}
			// a batch normally ends on a whole command: the server writes one command's events at once
			out = step(out)
			for _, l := range out {
				select {
				case ob.ch <- l:
				case <-ctx.Done():
					return false
				}
			}
			return true
		})
		ob.err = err
		close(ob.done)
		close(ob.ch)
	}()
	return ob
}

// watchLoop runs the feed until ctx is done, emit returns false or the watch fails
// beyond retrying. emit gets the events parsed from one read of the stream.
func (c *Client) watchLoop(ctx context.Context, prefix string, o watchOptions, emit func([]WatchEvent) bool) error {
	idle := o.idle
	if idle <= 0 {
		idle = 45 * time.Second
	}
	hasLast, last := o.hasFrom, o.fromIndex
	givenAtLast := 0 // events of index last already given (0: resume strictly after last)
	compactedBy := map[string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		u, rest := c.eps.pick(false) // any node serves a watch
		if err := sleepCtx(ctx, rest); err != nil {
			return err
		}
		q := url.Values{}
		if prefix != "" {
			q.Set("prefix", prefix)
		}
		if hasLast {
			from := last
			if givenAtLast > 0 && from > 0 {
				from--
			}
			q.Set("from_index", strconv.FormatUint(from, 10))
		}
		path := "/v1/watch"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		sctx, cancel := context.WithCancel(ctx)
		res, err := c.openStream(sctx, cancel, u+path)
		if err != nil {
			cancel()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.eps.connectFailed(u, 0.5+c.random())
			continue
		}
		if res.StatusCode != 200 {
			data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
			res.Body.Close()
			cancel()
			e := errorFromResponse(res.StatusCode, data, u)
			switch {
			case e.Code == "compacted":
				// another node may still keep it (one that restored a snapshot keeps less)
				compactedBy[u] = true
				if len(compactedBy) >= len(c.eps.urls()) {
					return e
				}
				c.eps.connectFailed(u, 1)
				continue
			case res.StatusCode == 503 || res.StatusCode == 429 || res.StatusCode >= 500:
				c.eps.retryAfter(u, parseRetryAfter(res.Header.Get("Retry-After"), time.Second, time.Now()))
				continue
			}
			return e // 400, 401, 403: asking again cannot help
		}
		c.eps.succeeded(u)
		compactedBy = map[string]bool{}
		// a resume after last-1 re-sends the whole group of last: skip what was given
		resumeIndex, toSkip := last, givenAtLast
		timer := time.AfterFunc(idle, cancel)
		br := bufio.NewReaderSize(res.Body, 64<<10)
		var frame []string
		frameBytes := 0
		var batch []WatchEvent
		var ferr error
		stop := false
		for !stop {
			line, rerr := br.ReadString('\n')
			if rerr != nil {
				break // the stream ended or broke: resume elsewhere
			}
			timer.Reset(idle)
			line = strings.TrimRight(line, "\r\n")
			if line != "" {
				frameBytes += len(line)
				if frameBytes > watchMaxFrame {
					ferr = &Error{Code: "bad_response", Endpoint: u, Message: fmt.Sprintf("%s: a watch frame over %d bytes", u, watchMaxFrame)}
					break
				}
				frame = append(frame, line)
				continue
			}
			f, isMarker, ok, perr := parseFrame(frame)
			frame, frameBytes = frame[:0], 0
			if perr != nil {
				ferr = &Error{Code: "bad_response", Endpoint: u, Message: u + ": " + perr.Error()}
				break
			}
			if ok {
				switch {
				case isMarker:
					if !hasLast || f.Index > last {
						hasLast, last, givenAtLast = true, f.Index, 0
					}
					batch = append(batch, f)
				case f.Event == "state":
					batch = append(batch, f)
				case toSkip > 0 && f.Index == resumeIndex:
					toSkip--
				default:
					toSkip = 0
					if hasLast && f.Index < last {
						break // not from a sound node: never twice
					}
					if hasLast && f.Index == last {
						givenAtLast++
					} else {
						hasLast, last, givenAtLast = true, f.Index, 1
					}
					batch = append(batch, f)
				}
			}
			if len(batch) > 0 && br.Buffered() == 0 {
				if !emit(batch) {
					stop = true
				}
				batch = nil
			}
		}
		if len(batch) > 0 && !stop {
			stop = !emit(batch)
		}
		timer.Stop()
		res.Body.Close()
		cancel()
		if ferr != nil {
			return ferr
		}
		if stop || ctx.Err() != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		}
		c.eps.connectFailed(u, 0.5+c.random())
	}
}

// openStream: connecting and the answer's head must not take long (cancel ends the
// stream's ctx if they do); the stream itself may.
func (c *Client) openStream(ctx context.Context, cancel context.CancelFunc, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "raftlock-client-go")
	req.Header.Set("Accept", "text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	t := time.AfterFunc(watchConnectTimeout, cancel)
	res, err := c.httpc.Do(req)
	if !t.Stop() && err == nil {
		res.Body.Close()
		return nil, context.DeadlineExceeded
	}
	return res, err
}

// parseFrame reads one SSE frame: an event, the id-only marker (isMarker), or nothing
// (ok false: a comment, an unknown frame).
func parseFrame(lines []string) (ev WatchEvent, isMarker, ok bool, err error) {
	var id, name, data string
	hasID, hasName, hasData := false, false, false
	for _, line := range lines {
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value := line, ""
		if i := strings.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], strings.TrimPrefix(line[i+1:], " ")
		}
		switch field {
		case "id":
			id, hasID = value, true
		case "event":
			name, hasName = value, true
		case "data":
			if hasData {
				data += "\n" + value
			} else {
				data, hasData = value, true
			}
		}
	}
	if !hasName && !hasData {
		if !hasID {
			return ev, false, false, nil
		}
		n, perr := strconv.ParseUint(id, 10, 64)
		if perr != nil {
			return ev, false, false, nil
		}
		return WatchEvent{Event: "synced", Index: n}, true, true, nil
	}
	if !hasName || !hasData {
		return ev, false, false, nil
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal([]byte(data), &raw) != nil {
		return ev, false, false, fmt.Errorf("watch: event data is not a JSON object: %.100s", data)
	}
	if json.Unmarshal([]byte(data), &ev) != nil || raw["name"] == nil || raw["kind"] == nil || raw["index"] == nil {
		return ev, false, false, fmt.Errorf("watch: malformed event data: %.100s", data)
	}
	ev.Event = name
	return ev, false, true, nil
}
