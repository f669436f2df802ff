package raftlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Integration tests against a real cluster: RAFTLOCK_TEST_ENDPOINTS=http://127.0.0.1:…,…
// (npm test's test/clients/go-python.test.ts starts one and sets it).

func clusterClient(t *testing.T) *Client {
	t.Helper()
	eps := os.Getenv("RAFTLOCK_TEST_ENDPOINTS")
	if eps == "" {
		t.Skip("integration: RAFTLOCK_TEST_ENDPOINTS is not set (comma-separated API URLs of a running cluster); npm test sets it")
	}
	return newTestClient(t, Config{Endpoints: strings.Split(eps, ","), DialTimeout: 2 * time.Second, Token: os.Getenv("RAFTLOCK_TEST_TOKEN")})
}

func uniqueName(t *testing.T, what string) string {
	return fmt.Sprintf("go-it/%s-%d", what, time.Now().UnixNano())
}

func TestIntegrationMutualExclusionAndIncreasingTokens(t *testing.T) {
	c := clusterClient(t)
	name := uniqueName(t, "mutex")
	const workers, rounds = 3, 4
	var mu sync.Mutex
	inside, maxInside := 0, 0
	var tokens []int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, err := NewSession(c, WithTTL(5), WithOwner(fmt.Sprintf("go-worker-%d", i)))
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			m := NewMutex(s, name)
			for k := 0; k < rounds; k++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				if err := m.Lock(ctx); err != nil {
					cancel()
					errs <- err
					return
				}
				mu.Lock()
				inside++
				if inside > maxInside {
					maxInside = inside
				}
				tokens = append(tokens, m.FencingToken())
				mu.Unlock()
				time.Sleep(5 * time.Millisecond) // widen the critical section
				if !m.Held() {
					errs <- fmt.Errorf("worker %d: lock not held inside the critical section", i)
				}
				mu.Lock()
				inside--
				mu.Unlock()
				err := m.Unlock(ctx)
				cancel()
				if err != nil {
					errs <- err
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if maxInside != 1 {
		t.Fatalf("%d holders at once", maxInside)
	}
	if len(tokens) != workers*rounds {
		t.Fatalf("%d grants", len(tokens))
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("tokens not increasing: %v", tokens)
		}
	}
}

func TestIntegrationTryLockTimeoutAndClose(t *testing.T) {
	c := clusterClient(t)
	name := uniqueName(t, "try")
	ctx := context.Background()
	s1, err := NewSession(c, WithTTL(5), WithOwner("holder"))
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := NewSession(c, WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	m1, m2 := NewMutex(s1, name), NewMutex(s2, name)
	if err := m1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := m2.TryLock(ctx); !errors.Is(err, ErrLocked) || !errors.As(err, &e) || e.Holder == nil || e.Holder.SessionID != string(s1.Lease()) || e.Holder.FencingToken != m1.FencingToken() {
		t.Fatalf("TryLock: %v", err)
	}
	// A Lock that gives up (ctx timeout) while queued leaves no grant behind.
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = m2.Lock(tctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with a 300 ms ctx on a held lock: %v", err)
	}
	ok, err := m1.Check(ctx)
	if err != nil || !ok {
		t.Fatalf("check of the holder's token: %v %v", ok, err)
	}
	// Closing the holder's session frees the lock at once; the next grant has a larger token.
	old := m1.FencingToken()
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	<-s1.Done()
	li, err := c.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if li.Held {
		t.Fatalf("after the holder closed, %s is held by %+v: the given-up Lock left a grant behind", name, li.Holder)
	}
	if err := m2.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if m2.FencingToken() <= old {
		t.Fatalf("token %d not above %d", m2.FencingToken(), old)
	}
	if err := m2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestIntegrationSessionEndedElsewhereIsLost(t *testing.T) {
	c := clusterClient(t)
	s, err := NewSession(c, WithTTL(3))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Someone else ends the session (an operator, `raftlock session close`).
	if err := c.closeSession(context.Background(), string(s.Lease()), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("Done not closed after the server ended the session")
	}
	if !errors.Is(s.Err(), ErrSessionNotFound) {
		t.Fatalf("Err %v", s.Err())
	}
}
