"""Fencing in your database (docs/client.md "Fencing in your database"): the stores refuse a
write with a stale fencing token through raftlock's scripts (deploy/postgres, deploy/mysql,
deploy/redis) and say so with the code RLF01. The client imports no driver:
``is_stale_fencing_token`` reads the exceptions of the usual ones by their shape."""

import re
from typing import Optional

#: The code of every store's refusal of a stale fencing token: PostgreSQL's SQLSTATE, and the
#: start of MySQL's MESSAGE_TEXT and of the Redis scripts' error reply
#: (``RLF01 stale fencing token 4 (highest 5) for invoice/42``).
STALE_FENCING_TOKEN_CODE = "RLF01"

# MySQL's and Redis's wording, after an optional driver prefix ("(1644, '", "1644 (45000): ")
_STALE_TEXT = re.compile(r"""(?:^|[\s:)'"(])RLF01 stale fencing token \d+ \(highest \d+\)""")


def is_stale_fencing_token(exc: Optional[BaseException]) -> bool:
    """True when ``exc`` (or the exception it was raised from) is a store's refusal of a stale
    fencing token: SQLSTATE RLF01 from PostgreSQL (psycopg2's ``pgcode``, psycopg's and
    asyncpg's ``sqlstate``), or an exception whose text carries the RLF01 refusal (PyMySQL,
    mysqlclient, mysql-connector, redis-py). Then the lock has passed to another holder and
    nothing was written: stop, roll back (MySQL keeps the transaction open after an error),
    and take the lock again before writing."""
    seen = 0
    while exc is not None and seen < 4:
        if STALE_FENCING_TOKEN_CODE in (getattr(exc, "pgcode", None), getattr(exc, "sqlstate", None)):
            return True
        texts = [str(exc)] + [a for a in getattr(exc, "args", ()) if isinstance(a, str)]
        if any(_STALE_TEXT.search(t) for t in texts):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False
