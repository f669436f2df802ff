package raftlock

import (
	"os"
	"testing"
)

// TestMain: the unit tests configure their clients explicitly; the environment that New
// reads (RAFTLOCK_ENDPOINTS, …) must not redirect them. The integration tests use
// RAFTLOCK_TEST_ENDPOINTS instead.
func TestMain(m *testing.M) {
	for _, v := range []string{"RAFTLOCK_ENDPOINTS", "RAFTLOCK_TOKEN", "RAFTLOCK_CA_FILE"} {
		os.Unsetenv(v)
	}
	os.Exit(m.Run())
}
