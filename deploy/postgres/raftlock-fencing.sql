-- raftlock fencing for PostgreSQL: the database refuses writes that carry a stale fencing
-- token. Install once per database (running it again changes nothing):
--
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f deploy/postgres/raftlock-fencing.sql
--
-- Use: in ONE transaction, fence first, as its own statement, then write:
--
--   BEGIN;
--   SELECT raftlock_fence('invoice/42', $1);        -- $1: the lock's fencing token
--   UPDATE invoices SET status = 'paid' WHERE id = 42;
--   COMMIT;
--
-- raftlock_fence(resource, token) raises SQLSTATE 'RLF01' when `token` is lower than the
-- highest token recorded for `resource` (a holder whose lock has passed to someone else);
-- the transaction is then aborted and its write never happens. Otherwise it records
-- `token` as the highest and returns. An equal token is allowed: the same holder may write
-- several times under one grant.
--
-- Why it is correct under concurrency at READ COMMITTED (the default): the INSERT … ON
-- CONFLICT DO UPDATE below takes a row lock on the resource's row, also when its WHERE
-- refuses the update, and keeps it until the transaction ends. Two transactions that fence
-- the same resource therefore run one after the other: the second waits for the first to
-- commit or roll back, then compares against the token the first recorded. The fenced
-- writes of one resource are thus committed in non-decreasing token order, and a holder
-- with a lower token can never commit after one with a higher token (no lost update).
-- The write must come AFTER the fence call, in a statement of its own, so that it reads
-- what the previous holder committed (at READ COMMITTED every statement takes a fresh
-- snapshot; a single statement like `WITH f AS (SELECT raftlock_fence(…)) UPDATE …` would
-- read with the snapshot from before the wait). At REPEATABLE READ or SERIALIZABLE the
-- fence is just as safe, but the waiting transaction fails with SQLSTATE 40001 and is to
-- be retried, as usual at those levels.
--
-- The SDK's fencedQuery() (docs/client.md) wraps this pattern and turns RLF01 into a
-- StaleFencingTokenError. examples/fenced-postgres.ts shows it end to end.

CREATE TABLE IF NOT EXISTS raftlock_fence (
  resource   text        PRIMARY KEY,
  token      bigint      NOT NULL CHECK (token >= 0),
  updated_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE raftlock_fence IS
  'raftlock: the highest fencing token seen per resource (deploy/postgres/raftlock-fencing.sql)';

CREATE OR REPLACE FUNCTION raftlock_fence(resource text, token bigint) RETURNS void
LANGUAGE plpgsql
-- a fixed search_path: the function always means this schema's table, whatever the caller's
SET search_path FROM CURRENT
AS $$
DECLARE
  recorded bigint;
BEGIN
  IF resource IS NULL OR token IS NULL THEN
    RAISE EXCEPTION 'raftlock_fence: resource and token must not be null'
      USING ERRCODE = '22004';  -- null_value_not_allowed
  END IF;
  IF token < 0 THEN
    RAISE EXCEPTION 'raftlock_fence: token % is negative', token
      USING ERRCODE = '22003';  -- numeric_value_out_of_range
  END IF;

  -- Locks the resource's row (inserting it the first time) until the transaction ends, and
  -- raises the recorded token only when the new one is at least as high.
  INSERT INTO raftlock_fence AS f (resource, token)
  VALUES (raftlock_fence.resource, raftlock_fence.token)
  ON CONFLICT ON CONSTRAINT raftlock_fence_pkey DO UPDATE
    SET token = EXCLUDED.token, updated_at = now()
    WHERE f.token <= EXCLUDED.token
  RETURNING f.token INTO recorded;

  IF NOT FOUND THEN
    -- The WHERE refused: a higher token is recorded. The row is locked by us, so this read
    -- sees the value that refused us.
    SELECT f.token INTO recorded FROM raftlock_fence AS f WHERE f.resource = raftlock_fence.resource;
    RAISE EXCEPTION 'raftlock: stale fencing token % for "%": a holder with token % has written',
        raftlock_fence.token, raftlock_fence.resource, recorded
      USING ERRCODE = 'RLF01',
            DETAIL = format('resource=%s token=%s highest=%s', raftlock_fence.resource, raftlock_fence.token, recorded),
            HINT = 'the lock has passed to another holder: stop, and take the lock again before writing';
  END IF;
END
$$;

COMMENT ON FUNCTION raftlock_fence(text, bigint) IS
  'raftlock: raises SQLSTATE RLF01 when token is lower than the highest recorded for resource, else records it (deploy/postgres/raftlock-fencing.sql)';
