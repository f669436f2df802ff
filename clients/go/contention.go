package raftlock

import "sync"

// Contention (docs/contract.md §5 "Contention"): every keepalive answer tells, for each
// grant of the session, how many requests wait on its name, so a holder learns that
// someone waits (Chubby's "conflicting lock request") and a long job can yield at a safe
// point. A Mutex's or LockSet's Contended() channel receives a Contention when a keepalive
// finds requests waiting where the one before found none; Waiters() is the last count.

// Contention is one lock that became contended: Waiters requests wait on Name.
type Contention struct {
	Name    string
	Waiters int
}

// contention is the waiter count of some grants and the channel that announces them.
type contention struct {
	mu      sync.Mutex
	waiters map[string]int
	ch      chan Contention
}

func newContention() *contention {
	return &contention{waiters: map[string]int{}, ch: make(chan Contention, 1)}
}

// note records a keepalive's count for name; it announces a name that became contended
// (without blocking: a reader that is behind gets the first news, Waiters has the rest).
func (c *contention) note(name string, n int) {
	c.mu.Lock()
	was := c.waiters[name]
	c.waiters[name] = n
	c.mu.Unlock()
	if was == 0 && n > 0 {
		select {
		case c.ch <- Contention{Name: name, Waiters: n}:
		default:
		}
	}
}

// total is the requests waiting on any of the names, as of the last keepalive.
func (c *contention) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, w := range c.waiters {
		n += w
	}
	return n
}

func (c *contention) of(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiters[name]
}

func (c *contention) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiters = map[string]int{}
}
