package raftlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Two services transferring between the same two accounts in opposite order (docs/contract.md
// §5): with one Mutex per account, the wait that closes the cycle gets ErrDeadlock at once;
// with a LockSet, never.
func TestIntegrationOppositeOrderDeadlocksPerNameNeverWithLockSet(t *testing.T) {
	c := clusterClient(t)
	a1, a2 := uniqueName(t, "acct1"), uniqueName(t, "acct2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sa, err := NewSession(c, WithTTL(20))
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	sb, err := NewSession(c, WithTTL(20))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	ma1, mb2 := NewMutex(sa, a1), NewMutex(sb, a2)
	if err := ma1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mb2.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	aWaits := make(chan error, 1)
	ma2 := NewMutex(sa, a2)
	go func() { aWaits <- ma2.Lock(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		li, err := c.Get(ctx, a2)
		if err == nil && li.Waiters == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a did not start waiting")
		}
	}
	started := time.Now()
	err = NewMutex(sb, a1).Lock(ctx)
	var e *Error
	if !errors.Is(err, ErrDeadlock) || !errors.As(err, &e) || len(e.Cycle) != 2 || e.Cycle[0].SessionID != string(sb.Lease()) || e.Cycle[0].Name != a1 {
		t.Fatalf("expected ErrDeadlock naming the cycle, got %v %+v", err, e)
	}
	if time.Since(started) > 10*time.Second {
		t.Fatalf("refused after %v, not at once", time.Since(started))
	}
	if err := mb2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-aWaits; err != nil {
		t.Fatal(err)
	}
	if err := ma1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ma2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// the same transfers with lock sets, in opposite orders, concurrently: no deadlock
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i, names := range [][]string{{a1, a2}, {a2, a1}} {
		wg.Add(1)
		go func(i int, names []string) {
			defer wg.Done()
			s, err := NewSession(c, WithTTL(20))
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			for k := 0; k < 5; k++ {
				ls := NewLockSet(s, names)
				if err := ls.Lock(ctx); err != nil {
					errs <- err
					return
				}
				if !ls.Held() || ls.FencingToken(a1) <= 0 || ls.FencingToken(a2) <= 0 {
					errs <- errors.New("a lock set not wholly held")
					return
				}
				time.Sleep(5 * time.Millisecond)
				if err := ls.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		}(i, names)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
