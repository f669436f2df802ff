// fenced-worker increments a fenced counter under a raftlock lock, for the cross-language
// test (test/clients/go-python.test.ts): lock, read the counter, write value+1 with the
// fencing token, unlock; ROUNDS times. The counter refuses a write whose token is below
// the highest it has seen; any refusal or error exits non-zero.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	raftlock "github.com/raftlock/raftlock/clients/go"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fenced-worker:", err)
		os.Exit(1)
	}
}

func run() error {
	endpoints := strings.Split(os.Getenv("RAFTLOCK_TEST_ENDPOINTS"), ",")
	counter := os.Getenv("COUNTER_URL")
	name := os.Getenv("LOCK_NAME")
	worker := os.Getenv("WORKER_ID")
	rounds, err := strconv.Atoi(os.Getenv("ROUNDS"))
	if err != nil || counter == "" || name == "" {
		return fmt.Errorf("needs RAFTLOCK_TEST_ENDPOINTS, COUNTER_URL, LOCK_NAME, WORKER_ID, ROUNDS")
	}
	cli, err := raftlock.New(raftlock.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()
	s, err := raftlock.NewSession(cli, raftlock.WithTTL(5), raftlock.WithOwner(worker))
	if err != nil {
		return err
	}
	defer s.Close()
	m := raftlock.NewMutex(s, name)
	for i := 0; i < rounds; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := increment(ctx, m, counter, worker)
		cancel()
		if err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
	}
	return nil
}

func increment(ctx context.Context, m *raftlock.Mutex, counter, worker string) error {
	if err := m.Lock(ctx); err != nil {
		return err
	}
	var v struct {
		Value int `json:"value"`
	}
	res, err := http.Get(counter + "/value")
	if err != nil {
		return err
	}
	err = json.NewDecoder(res.Body).Decode(&v)
	res.Body.Close()
	if err != nil {
		return err
	}
	if !m.Held() {
		return fmt.Errorf("lock lost before the write")
	}
	b, _ := json.Marshal(map[string]interface{}{"value": v.Value + 1, "token": m.FencingToken(), "worker": worker})
	res, err = http.Post(counter+"/write", "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("the counter refused token %d: HTTP %d", m.FencingToken(), res.StatusCode)
	}
	return m.Unlock(ctx)
}
