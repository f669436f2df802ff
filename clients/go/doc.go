// Package raftlock is the Go client of raftlock, a distributed lock service on Raft.
//
// It is shaped after etcd's clientv3 + concurrency packages, so a program written for
// etcd ports by changing its imports and the package names in front of New, Config,
// NewSession and NewMutex:
//
//	cli, err := raftlock.New(raftlock.Config{Endpoints: []string{"http://127.0.0.1:7001"}, DialTimeout: 5 * time.Second})
//	defer cli.Close()
//	s, err := raftlock.NewSession(cli, raftlock.WithTTL(10))
//	defer s.Close()
//	m := raftlock.NewMutex(s, "/billing-lock")
//	err = m.Lock(ctx)
//	token := m.FencingToken() // pass it to every resource you write
//	err = m.Unlock(ctx)
//
// The safety rules are the TypeScript SDK's (docs/client.md in the repository):
//
//   - A session is proven alive until the send time of its last acknowledged renewal +
//     ttl − margin; at that instant at the latest it is lost (Done is closed), which is
//     before the server could expire it. Keepalives go out every ttl/3, jittered ±10%.
//   - Every change carries one Idempotency-Key for all its retries; a 504 or a broken
//     connection is retried with it, and when retries run out the error is
//     ErrOutcomeUnknown, never a false "failed".
//   - Calls spread over the endpoints (any node forwards to the leader); an endpoint that
//     answers 503/429 rests for its Retry-After, one that refuses connections backs off.
//   - An acquire that ends without a definite "not applied" (ctx done, outcome unknown, a
//     network error) releases the name in its session before returning, so no grant is
//     left behind.
//
// Only the standard library is used.
package raftlock
