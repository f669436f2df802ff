"""is_stale_fencing_token against exceptions shaped as the usual drivers raise them."""

import unittest

from raftlock import STALE_FENCING_TOKEN_CODE, LockLostError, is_stale_fencing_token


class Psycopg2Error(Exception):
    def __init__(self, message: str, pgcode: str) -> None:
        super().__init__(message)
        self.pgcode = pgcode


class PsycopgError(Exception):
    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class PyMySQLError(Exception):
    """PyMySQL and mysqlclient: args are (errno, message)."""


class ResponseError(Exception):
    """redis-py: the reply's text."""


class FencingErrorTest(unittest.TestCase):
    def test_every_stores_refusal_is_recognised(self) -> None:
        self.assertEqual(STALE_FENCING_TOKEN_CODE, "RLF01")
        stale = [
            Psycopg2Error('raftlock: stale fencing token 4 for "rules": a holder with token 5 has written', "RLF01"),
            PsycopgError("raftlock: stale fencing token 4", "RLF01"),
            PyMySQLError(1644, "RLF01 stale fencing token 4 (highest 5) for invoice/42"),
            ResponseError("RLF01 stale fencing token 4 (highest 5) for {invoice:42}:fence"),
        ]
        for exc in stale:
            self.assertTrue(is_stale_fencing_token(exc), repr(exc))
        try:
            try:
                raise PyMySQLError(1644, "RLF01 stale fencing token 4 (highest 5) for r")
            except PyMySQLError as inner:
                raise RuntimeError("selling failed") from inner
        except RuntimeError as outer:
            self.assertTrue(is_stale_fencing_token(outer), "found through __cause__")

    def test_other_errors_are_not(self) -> None:
        for exc in [None, Psycopg2Error("could not serialize access", "40001"), PyMySQLError(1213, "Deadlock found"),
                    ResponseError("ERR raftlock fence: token must be an integer from 0 to 9223372036854775807"),
                    ResponseError("XRLF01 stale fencing token 4 (highest 5)"), ValueError("RLF01"),
                    LockLostError("invoice/42", 4, "the lock can no longer be proven held")]:
            self.assertFalse(is_stale_fencing_token(exc), repr(exc))


if __name__ == "__main__":
    unittest.main()
