package raftlock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Integration tests of docs/contract.md §4 against a real cluster (see integration_test.go).

func nextLeader(t *testing.T, o *Observer) *LeaderInfo {
	t.Helper()
	select {
	case l, ok := <-o.Leaders():
		if !ok {
			t.Fatalf("observer ended: %v", o.Err())
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no leader change within 10 s")
	}
	return nil
}

func TestIntegrationElectionHandoverObserveRevoke(t *testing.T) {
	c := clusterClient(t)
	name := uniqueName(t, "election")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := c.Observe(ctx, name)
	if l := nextLeader(t, o); l != nil {
		t.Fatalf("a fresh election has leader %+v", l)
	}
	s1, err := NewSession(c, WithTTLDuration(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := NewSession(c, WithTTLDuration(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	l1, err := NewElection(s1, name).Campaign(ctx, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	if got := nextLeader(t, o); got == nil || got.SessionID != string(s1.Lease()) || got.Value != "host-a" || got.FencingToken != l1.FencingToken() {
		t.Fatalf("observed %+v", got)
	}
	won := make(chan *Leadership, 1)
	errs := make(chan error, 1)
	go func() {
		l, err := NewElection(s2, name).Campaign(ctx, "host-b")
		if err != nil {
			errs <- err
			return
		}
		won <- l
	}()
	if err := l1.Proclaim(ctx, "host-a:2"); err != nil {
		t.Fatal(err)
	}
	if got := nextLeader(t, o); got == nil || got.Value != "host-a:2" {
		t.Fatalf("observed %+v after proclaim", got)
	}
	// the second candidate queues (a waiter of the election's lock) before the resign
	deadline := time.Now().Add(10 * time.Second)
	for {
		li, err := c.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if li.Waiters == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second candidate never queued")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := l1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	var l2 *Leadership
	select {
	case l2 = <-won:
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting candidate did not lead after the resign")
	}
	if l2.FencingToken() <= l1.FencingToken() {
		t.Fatalf("token %d not above %d", l2.FencingToken(), l1.FencingToken())
	}
	// one step: the resign and the win are one command, so no nil in between
	if got := nextLeader(t, o); got == nil || got.SessionID != string(s2.Lease()) || got.Value != "host-b" {
		t.Fatalf("observed %+v after the handover", got)
	}
	// an administrator revokes the leadership: the keepalive answer ends it
	if _, err := c.Revoke(ctx, name); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l2.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the revoked leadership's Done did not close")
	}
	if !errors.Is(l2.Err(), ErrLockLost) || s2.Err() != nil {
		t.Fatalf("leadership err %v, session err %v", l2.Err(), s2.Err())
	}
	if got := nextLeader(t, o); got != nil {
		t.Fatalf("observed %+v after the revoke", got)
	}
	if li, err := c.Leader(ctx, name); err != nil || li != nil {
		t.Fatalf("Leader after the revoke: %+v %v", li, err)
	}
}

func TestIntegrationWatchResumesFromIndex(t *testing.T) {
	c := clusterClient(t)
	prefix := uniqueName(t, "watch") + "/"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := c.Watch(ctx, prefix)
	if e := <-w.Events(); e.Event != "synced" {
		t.Fatalf("a fresh prefix opened with %+v", e)
	}
	s, err := NewSession(c, WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 3; i++ {
		m := NewMutex(s, fmt.Sprintf("%sl%d", prefix, i))
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var live []WatchEvent
	for len(live) < 6 {
		select {
		case e := <-w.Events():
			live = append(live, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d events", len(live))
		}
	}
	for i, e := range live {
		if want := []string{"acquired", "released"}[i%2]; e.Event != want || e.Kind != "lock" || e.SessionID != string(s.Lease()) {
			t.Fatalf("event %d: %+v", i, e)
		}
		if i > 0 && e.Index <= live[i-1].Index {
			t.Fatalf("indexes not increasing: %+v", live)
		}
	}
	// a second watcher resumed after the first event gives exactly the rest
	w2 := c.Watch(ctx, prefix, WithFromIndex(live[0].Index))
	for i, want := range live[1:] {
		select {
		case e := <-w2.Events():
			if e != want {
				t.Fatalf("resumed event %d: %+v, want %+v", i, e, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("resumed watch gave %d events", i)
		}
	}
}

func TestIntegrationSemaphoreSharedLockAndRevoke(t *testing.T) {
	c := clusterClient(t)
	name := uniqueName(t, "s4")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s1, err := NewSession(c, WithTTLDuration(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := NewSession(c, WithTTLDuration(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	// two shared holders at once; an exclusive try fails
	r1, r2 := NewMutex(s1, name+"/rw", WithShared()), NewMutex(s2, name+"/rw", WithShared())
	if err := r1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r2.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	li, err := c.Get(ctx, name+"/rw")
	if err != nil || li.Mode != "shared" || len(li.Holders) != 2 {
		t.Fatalf("shared lock %+v %v", li, err)
	}
	if err := NewMutex(s1, name+"/rw-x").TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	// a semaphore of 2: two permits in s1, none left for s2
	p1 := NewSemaphore(s1, name+"/pool", 2, WithPermits(2))
	if err := p1.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := NewSemaphore(s2, name+"/pool", 2).TryAcquire(ctx); !errors.Is(err, ErrSemaphoreFull) || !errors.As(err, &e) || e.InUse != 2 || e.Limit != 2 {
		t.Fatalf("TryAcquire of a full semaphore: %v", err)
	}
	if err := NewSemaphore(s2, name+"/pool", 3).TryAcquire(ctx); !errors.Is(err, ErrLimitMismatch) {
		t.Fatalf("another limit: %v", err)
	}
	si, err := c.GetSemaphore(ctx, name+"/pool")
	if err != nil || si.InUse != 2 || len(si.Holders) != 1 || si.Holders[0].FencingToken != p1.FencingToken() {
		t.Fatalf("semaphore %+v %v", si, err)
	}
	// revoke the permits and s2's share: both holders learn it from a keepalive
	if got, err := c.Revoke(ctx, name+"/pool", RevokeSemaphore()); err != nil || len(got) != 1 {
		t.Fatalf("revoke: %v %v", got, err)
	}
	if _, err := c.Revoke(ctx, name+"/rw", RevokeSession(string(s2.Lease()))); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p1.Held() || r2.Held() {
		if time.Now().After(deadline) {
			t.Fatal("the revoked grants are still Held")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(p1.Err(), ErrLockLost) || !errors.Is(r2.Err(), ErrLockLost) || !r1.Held() {
		t.Fatalf("after revoke: %v, %v, r1 held %v", p1.Err(), r2.Err(), r1.Held())
	}
}
