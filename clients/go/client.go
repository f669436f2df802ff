package raftlock

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"math"
	mrand "math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// Config configures a Client. Endpoints is required; everything else has a default.
type Config struct {
	// Endpoints are API URLs of the cluster's nodes (any subset works; more gives failover).
	Endpoints []string
	// DialTimeout bounds opening one connection, TLS handshake included (default 5s).
	DialTimeout time.Duration
	// RequestTimeout is the budget of one HTTP attempt, on top of any wait (default 5s).
	RequestTimeout time.Duration
	// RetryBudget is the budget of one call across its retries and failovers (default 15s).
	RetryBudget time.Duration
	// Token is a bearer token, for clusters that have auth on.
	Token string
	// TLS is used for https:// endpoints as given. Without it, CAFile, CertFile and
	// KeyFile build one (the cluster's CA; a client certificate for mutual TLS).
	TLS      *tls.Config
	CAFile   string
	CertFile string
	KeyFile  string
	// OnWarning receives recoverable problems (a failed keepalive that will be retried, a
	// release that failed and will expire with its session), and, with a nil err, each
	// grant a late copy of a given-up acquire made that the session released (sweep.go).
	// Default: nowhere.
	OnWarning func(message string, err error)
	// DisableLeaderRouting spreads calls round-robin over Endpoints. By default every call
	// goes to the leader the answers name (when its URL is one of Endpoints), sparing a
	// follower's relay; RAFTLOCK_LEADER_ROUTING=off turns it off too (README "Leader routing").
	DisableLeaderRouting bool
}

// Client talks to a raftlock cluster. It is safe for concurrent use.
type Client struct {
	eps            *endpointSet
	httpc          *http.Client
	transport      *http.Transport
	token          string
	requestTimeout time.Duration
	retryBudget    time.Duration
	onWarning      func(string, error)
	leaderRouting  bool
	rmu            sync.Mutex
	rng            *mrand.Rand
}

// New returns a client for cfg. It does not contact the cluster.
//
// The environment can point a program at a cluster without editing it (a program ported
// from etcd has its endpoints in its source): RAFTLOCK_ENDPOINTS (comma-separated API
// URLs), when set, replaces Config.Endpoints; RAFTLOCK_TOKEN and RAFTLOCK_CA_FILE fill in
// Token and CAFile when those are empty; RAFTLOCK_LEADER_ROUTING=off turns leader routing
// off. The raftlock command reads the same variables.
func New(cfg Config) (*Client, error) {
	eps := cfg.Endpoints
	if env := strings.TrimSpace(os.Getenv("RAFTLOCK_ENDPOINTS")); env != "" {
		eps = strings.Split(env, ",")
	}
	if cfg.Token == "" {
		cfg.Token = os.Getenv("RAFTLOCK_TOKEN")
	}
	if cfg.CAFile == "" && cfg.TLS == nil {
		cfg.CAFile = os.Getenv("RAFTLOCK_CA_FILE")
	}
	if len(eps) == 1 && strings.Contains(eps[0], ",") {
		eps = strings.Split(eps[0], ",")
	}
	rng := mrand.New(mrand.NewSource(time.Now().UnixNano()))
	set, err := newEndpointSet(eps, time.Now, rng.Intn(len(eps)+1))
	if err != nil {
		return nil, err
	}
	c := &Client{eps: set, token: cfg.Token, onWarning: cfg.OnWarning, rng: rng, leaderRouting: !cfg.DisableLeaderRouting}
	switch env := strings.TrimSpace(os.Getenv("RAFTLOCK_LEADER_ROUTING")); env {
	case "", "on":
	case "off":
		c.leaderRouting = false
	default:
		return nil, &Error{Code: "invalid_request", Message: fmt.Sprintf("raftlock: RAFTLOCK_LEADER_ROUTING: expected on or off, got %q", env)}
	}
	c.requestTimeout = orDefault(cfg.RequestTimeout, 5*time.Second)
	c.retryBudget = orDefault(cfg.RetryBudget, 15*time.Second)
	dial := orDefault(cfg.DialTimeout, 5*time.Second)
	if cfg.RequestTimeout < 0 || cfg.RetryBudget < 0 || cfg.DialTimeout < 0 {
		return nil, &Error{Code: "invalid_request", Message: "raftlock: Config timeouts must not be negative"}
	}
	tlsConf, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	c.transport = &http.Transport{
		Proxy:               nil, // the cluster is addressed directly
		DialContext:         (&net.Dialer{Timeout: dial, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: dial,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     10 * time.Second,
	}
	c.httpc = &http.Client{Transport: c.transport}
	return c, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func tlsConfig(cfg Config) (*tls.Config, error) {
	if cfg.TLS != nil {
		return cfg.TLS.Clone(), nil
	}
	if cfg.CAFile == "" && cfg.CertFile == "" && cfg.KeyFile == "" {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, &Error{Code: "invalid_request", Message: "raftlock: Config.CAFile: " + err.Error(), Err: err}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &Error{Code: "invalid_request", Message: fmt.Sprintf("raftlock: Config.CAFile %s holds no PEM certificate", cfg.CAFile)}
		}
		t.RootCAs = pool
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, &Error{Code: "invalid_request", Message: "raftlock: Config.CertFile and Config.KeyFile go together (a client certificate and its key)"}
	}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, &Error{Code: "invalid_request", Message: "raftlock: client certificate: " + err.Error(), Err: err}
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

// Close closes idle connections. Sessions still open are not closed on the server.
func (c *Client) Close() error {
	c.transport.CloseIdleConnections()
	return nil
}

// Endpoints returns the normalized API URLs.
func (c *Client) Endpoints() []string { return c.eps.urls() }

func (c *Client) random() float64 {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return c.rng.Float64()
}

func (c *Client) warn(msg string, err error) {
	if c.onWarning != nil {
		c.onWarning(msg, err)
	}
}

func newKey() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("raftlock: no randomness for an Idempotency-Key: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

func sessionPath(id, suffix string) string { return "/v1/sessions/" + url.PathEscape(id) + suffix }

// lockPath escapes the name as ONE path segment, so "jobs/check" is never read as the
// check action.
func lockPath(name, action string) string {
	p := "/v1/locks/" + url.PathEscape(name) // PathEscape escapes "/" too
	if action != "" {
		p += "/" + action
	}
	return p
}

func fixed(b map[string]interface{}) func(time.Duration) map[string]interface{} {
	return func(time.Duration) map[string]interface{} { return b }
}

type sessionGrant struct {
	SessionID string `json:"session_id"`
	TTLMs     int64  `json:"ttl_ms"`
}

type grant struct {
	Name         string `json:"name"`
	SessionID    string `json:"session_id"`
	FencingToken int64  `json:"fencing_token"`
	TTLMs        int64  `json:"ttl_ms"`
	// MaxHoldMs: the grant's remaining max hold, when it has one (grantHoldDeadline)
	MaxHoldMs *int64 `json:"max_hold_ms,omitempty"`
	sentAt    time.Time
}

func (c *Client) openSession(ctx context.Context, ttl time.Duration, owner string, lockDelay time.Duration) (sessionGrant, time.Time, error) {
	body := map[string]interface{}{}
	if ttl > 0 {
		body["ttl_ms"] = ttl.Milliseconds()
	}
	if owner != "" {
		body["owner"] = owner
	}
	if lockDelay > 0 {
		body["lock_delay_ms"] = lockDelay.Milliseconds()
	}
	var g sessionGrant
	a, err := c.do(ctx, call{method: "POST", path: "/v1/sessions", body: fixed(body), mode: modeKeyed, key: newKey()})
	if err != nil {
		return g, time.Time{}, err
	}
	if err := decode(a, "open session", &g); err != nil {
		return g, time.Time{}, err
	}
	if g.SessionID == "" || g.TTLMs <= 0 {
		return g, time.Time{}, &Error{Code: "bad_response", Endpoint: a.endpoint, Message: a.endpoint + ": open session: answer without session_id/ttl_ms"}
	}
	return g, a.sentAt, nil
}

// keepalive renews the session; the returned time (when the answered attempt was sent)
// is the base of the renewed lease.
// grants is the session's grants as of the keepalive (nil from a server whose answer does
// not list them: docs/api.md "Keepalive answers").
func (c *Client) keepalive(ctx context.Context, id string, deadline time.Time) (time.Time, []keepaliveGrant, error) {
	a, err := c.do(ctx, call{method: "POST", path: sessionPath(id, "/keepalive"), mode: modeRenewal, deadline: deadline})
	if err != nil {
		return time.Time{}, nil, err
	}
	var r struct {
		Grants *[]keepaliveGrant `json:"grants"`
	}
	if err := decode(a, "keepalive", &r); err != nil {
		return time.Time{}, nil, err
	}
	if r.Grants == nil {
		return a.sentAt, nil, nil
	}
	if *r.Grants == nil {
		return a.sentAt, []keepaliveGrant{}, nil
	}
	return a.sentAt, *r.Grants, nil
}

func (c *Client) closeSession(ctx context.Context, id string, budget time.Duration) error {
	cl := call{method: "DELETE", path: sessionPath(id, ""), mode: modeKeyed, key: newKey()}
	if budget > 0 {
		cl.deadline = time.Now().Add(budget)
	}
	_, err := c.do(ctx, cl)
	return err
}

// The contract's longest single wait (wait_ms ≤ 300000); longer waits re-queue.
const maxWaitPerRequest = 300 * time.Second

// acquireOpts are the optional fields of an acquire (docs/contract.md §4).
type acquireOpts struct {
	owner   string
	shared  bool
	maxHold time.Duration
}

func (c *Client) acquire(ctx context.Context, name, sessionID string, wait time.Duration, o acquireOpts) (grant, error) {
	base := map[string]interface{}{"session_id": sessionID}
	if o.owner != "" {
		base["owner"] = o.owner
	}
	if o.shared {
		base["mode"] = "shared"
	}
	if o.maxHold > 0 {
		base["max_hold_ms"] = o.maxHold.Milliseconds()
	}
	var g grant
	a, err := c.waitingCall(ctx, lockPath(name, "acquire"), base, wait)
	if err != nil {
		return g, err
	}
	if err := decode(a, "acquire "+name, &g); err != nil {
		return g, err
	}
	if g.FencingToken <= 0 {
		return g, &Error{Code: "bad_response", Endpoint: a.endpoint, Message: a.endpoint + ": acquire " + name + ": answer without a positive fencing_token"}
	}
	g.sentAt = a.sentAt
	return g, nil
}

// waitingCall is a keyed POST whose body carries wait_ms; a retry (same Idempotency-Key)
// asks only for the wait that is left.
func (c *Client) waitingCall(ctx context.Context, path string, base map[string]interface{}, wait time.Duration) (*answer, error) {
	waitMs := wait.Milliseconds()
	body := func(elapsed time.Duration) map[string]interface{} {
		b := make(map[string]interface{}, len(base)+1)
		for k, v := range base {
			b[k] = v
		}
		b["wait_ms"] = int64(math.Max(0, float64(waitMs-elapsed.Milliseconds())))
		return b
	}
	return c.do(ctx, call{method: "POST", path: path, body: body, mode: modeKeyed, key: newKey(), wait: wait})
}

func (c *Client) release(ctx context.Context, name, sessionID string, token int64, budget time.Duration) error {
	body := map[string]interface{}{"session_id": sessionID}
	if token > 0 {
		body["fencing_token"] = token
	}
	cl := call{method: "POST", path: lockPath(name, "release"), body: fixed(body), mode: modeKeyed, key: newKey()}
	if budget > 0 {
		cl.deadline = time.Now().Add(budget)
	}
	_, err := c.do(ctx, cl)
	return err
}

func (c *Client) checkToken(ctx context.Context, name string, token int64) (bool, error) {
	a, err := c.do(ctx, call{method: "GET", path: fmt.Sprintf("%s?fencing_token=%d", lockPath(name, "check"), token), mode: modeRead})
	if err != nil {
		return false, err
	}
	var r struct {
		Current *bool `json:"current"`
	}
	if err := decode(a, "check "+name, &r); err != nil {
		return false, err
	}
	if r.Current == nil {
		return false, &Error{Code: "bad_response", Endpoint: a.endpoint, Message: a.endpoint + ": check " + name + `: no boolean "current"`}
	}
	return *r.Current, nil
}

// LockInfo is the state of one lock (GET /v1/locks/{name}).
type LockInfo struct {
	Name    string  `json:"name"`
	Held    bool    `json:"held"`
	Holder  *Holder `json:"holder,omitempty"`
	Waiters int     `json:"waiters"`
	// Mode is "exclusive" or "shared" while held; Holders lists every holder (one
	// exclusive, or the shared holders) — docs/contract.md §4 "Shared (read) locks".
	Mode    string       `json:"mode,omitempty"`
	Holders []LockHolder `json:"holders,omitempty"`
}

// LockHolder is one holder of a lock, with the mode of its grant.
type LockHolder struct {
	Holder
	Mode string `json:"mode"`
}

// Get reads a lock's state (linearizable).
func (c *Client) Get(ctx context.Context, name string) (LockInfo, error) {
	var li LockInfo
	a, err := c.do(ctx, call{method: "GET", path: lockPath(name, ""), mode: modeRead})
	if err != nil {
		return li, err
	}
	err = decode(a, "get "+name, &li)
	return li, err
}
