package raftlock

import (
	"errors"
	"regexp"
)

// Fencing in your database (docs/client.md "Fencing in your database"): the stores refuse
// a write with a stale fencing token through raftlock's scripts — deploy/postgres,
// deploy/mysql and deploy/redis — and say so with the code RLF01. The client imports no
// driver; IsStaleFencingToken reads the errors of the usual ones by their shape.

// StaleFencingTokenCode is the code of every store's refusal of a stale fencing token:
// PostgreSQL's SQLSTATE, and the start of MySQL's MESSAGE_TEXT and of the Redis scripts'
// error reply ("RLF01 stale fencing token 4 (highest 5) for invoice/42").
const StaleFencingTokenCode = "RLF01"

// MySQL's and Redis's wording, after an optional driver prefix ("Error 1644 (45000): ").
var staleFencingText = regexp.MustCompile(`(^|[\s:)'"])RLF01 stale fencing token \d+ \(highest \d+\)`)

// IsStaleFencingToken reports whether err, or an error it wraps, is a store's refusal of
// a stale fencing token: SQLSTATE RLF01 from PostgreSQL (pgx's *pgconn.PgError and lib/pq's
// *pq.Error have a SQLState method), or an error whose text carries the RLF01 refusal
// (go-sql-driver/mysql's *mysql.MySQLError, go-redis' redis.Error). Then the lock has
// passed to another holder and nothing was written: stop, roll back (MySQL keeps the
// transaction open after an error), and take the lock again before writing.
func IsStaleFencingToken(err error) bool {
	if err == nil {
		return false
	}
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) && coded.SQLState() == StaleFencingTokenCode {
		return true
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if staleFencingText.MatchString(e.Error()) {
			return true
		}
	}
	return false
}
