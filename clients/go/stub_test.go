package raftlock

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// stub is a raftlock API stand-in: each test sets handle; every request is recorded.
type stub struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []stubReq
	handle func(w http.ResponseWriter, r stubReq)
}

type stubReq struct {
	Method string
	Path   string // escaped path as sent
	Key    string
	Auth   string
	Body   map[string]interface{}
	At     time.Time
	r      *http.Request
}

func newStub(t *testing.T) *stub {
	s := &stub{t: t}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *stub) serve(w http.ResponseWriter, r *http.Request) {
	sr := stubReq{Method: r.Method, Path: r.URL.EscapedPath(), Key: r.Header.Get("Idempotency-Key"), Auth: r.Header.Get("Authorization"), At: time.Now(), r: r}
	if b, _ := io.ReadAll(r.Body); len(b) > 0 {
		_ = json.Unmarshal(b, &sr.Body)
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, sr)
	h := s.handle
	s.mu.Unlock()
	if h == nil {
		h = defaultHandler(600)
	}
	h(w, sr)
}

func (s *stub) setHandler(h func(w http.ResponseWriter, r stubReq)) {
	s.mu.Lock()
	s.handle = h
	s.mu.Unlock()
}

func (s *stub) requests(match func(stubReq) bool) []stubReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []stubReq
	for _, r := range s.reqs {
		if match == nil || match(r) {
			out = append(out, r)
		}
	}
	return out
}

func isPath(method, suffix string) func(stubReq) bool {
	return func(r stubReq) bool { return r.Method == method && strings.HasSuffix(r.Path, suffix) }
}

func reply(w http.ResponseWriter, status int, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func errBody(code, msg string) map[string]interface{} {
	return map[string]interface{}{"error": map[string]interface{}{"code": code, "message": msg}}
}

// defaultHandler answers like a healthy cluster with one free lock per name.
func defaultHandler(ttlMs int) func(w http.ResponseWriter, r stubReq) {
	var mu sync.Mutex
	token := int64(10)
	return func(w http.ResponseWriter, r stubReq) {
		switch {
		case r.Method == "POST" && r.Path == "/v1/sessions":
			reply(w, 201, map[string]interface{}{"session_id": "s1", "ttl_ms": ttlMs})
		case r.Method == "POST" && strings.HasSuffix(r.Path, "/keepalive"):
			reply(w, 200, map[string]interface{}{"session_id": "s1", "ttl_ms": ttlMs})
		case r.Method == "DELETE":
			reply(w, 200, map[string]interface{}{"released": []string{}})
		case r.Method == "POST" && strings.HasSuffix(r.Path, "/acquire"):
			mu.Lock()
			token++
			t := token
			mu.Unlock()
			reply(w, 200, map[string]interface{}{"name": "x", "session_id": "s1", "fencing_token": t, "ttl_ms": ttlMs})
		case r.Method == "POST" && strings.HasSuffix(r.Path, "/release"):
			reply(w, 200, map[string]interface{}{"name": "x", "released": true})
		default:
			reply(w, 404, errBody("not_found", "no route"))
		}
	}
}

func newTestClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
