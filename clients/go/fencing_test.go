package raftlock

import (
	"errors"
	"fmt"
	"testing"
)

// pgError has the SQLState method of pgx's *pgconn.PgError and lib/pq's *pq.Error.
type pgError struct{ code, msg string }

func (e *pgError) Error() string    { return e.msg }
func (e *pgError) SQLState() string { return e.code }

// mysqlError prints as go-sql-driver/mysql's *mysql.MySQLError does.
type mysqlError struct {
	number   uint16
	sqlState string
	message  string
}

func (e *mysqlError) Error() string {
	return fmt.Sprintf("Error %d (%s): %s", e.number, e.sqlState, e.message)
}

// redisError is go-redis' redis.Error: the reply's text.
type redisError string

func (e redisError) Error() string { return string(e) }

func TestIsStaleFencingTokenReadsEveryStoresRefusal(t *testing.T) {
	stale := map[string]error{
		"pgx / lib/pq (SQLSTATE)": &pgError{"RLF01", `ERROR: raftlock: stale fencing token 4 for "rules": a holder with token 5 has written (SQLSTATE RLF01)`},
		"go-sql-driver/mysql":     &mysqlError{1644, "45000", "RLF01 stale fencing token 4 (highest 5) for invoice/42"},
		"go-redis":                redisError("RLF01 stale fencing token 4 (highest 5) for {invoice:42}:fence"),
		"wrapped":                 fmt.Errorf("selling: %w", &mysqlError{1644, "45000", "RLF01 stale fencing token 4 (highest 5) for r"}),
		"wrapped SQLSTATE":        fmt.Errorf("tx: %w", &pgError{"RLF01", "ERROR: raftlock: stale"}),
	}
	for name, err := range stale {
		if !IsStaleFencingToken(err) {
			t.Errorf("%s: %v is a stale-token refusal", name, err)
		}
	}
	notStale := map[string]error{
		"nil":                     nil,
		"other SQLSTATE":          &pgError{"40001", "could not serialize access"},
		"other MySQL error":       &mysqlError{1213, "40001", "Deadlock found when trying to get lock"},
		"bad token":               redisError("ERR raftlock fence: token must be an integer from 0 to 9223372036854775807"),
		"the code inside a word":  errors.New("XRLF01 stale fencing token 4 (highest 5)"),
		"the code without a text": errors.New("RLF01"),
		"a raftlock client error": ErrLockLost,
	}
	for name, err := range notStale {
		if IsStaleFencingToken(err) {
			t.Errorf("%s: %v is not a stale-token refusal", name, err)
		}
	}
}
