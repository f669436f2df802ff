-- raftlock fencing for MySQL 8 and MariaDB (10.11 and later): the database refuses writes
-- that carry a stale fencing token. Install once per database (running it again keeps the
-- recorded tokens and replaces the procedure with this version):
--
--   mysql   --database=app < deploy/mysql/raftlock-fencing.sql      # MySQL's client
--   mariadb --database=app < deploy/mysql/raftlock-fencing.sql      # MariaDB's client
--
-- (the DELIMITER lines are commands of those clients, around the procedure's body; with a
-- driver instead, run the file's three statements — CREATE TABLE, DROP PROCEDURE, CREATE
-- PROCEDURE — one by one, without the DELIMITER lines.)
--
-- Use: in ONE transaction, fence first, before any other statement, then read and write:
--
--   START TRANSACTION;
--   CALL raftlock_fence('invoice/42', ?);           -- ?: the lock's fencing token
--   UPDATE invoices SET status = 'paid' WHERE id = 42;
--   COMMIT;
--
-- raftlock_fence(resource, token) raises SQLSTATE '45000' (error 1644), with a
-- MESSAGE_TEXT that starts with `RLF01 stale fencing token`, when `token` is lower than
-- the highest token recorded for `resource` (a holder whose lock has passed to someone
-- else): `RLF01 stale fencing token 4 (highest 5) for invoice/42`. Otherwise it records
-- `token` as the highest and returns. An equal token is allowed: the same holder may write
-- several times under one grant.
--
-- Unlike PostgreSQL, MySQL does not abort the transaction when a statement fails: after
-- RLF01 the transaction is still open and holds the resource's row lock. The client must
-- stop there and ROLLBACK (every driver throws on the error, so `try { CALL; UPDATE;
-- COMMIT } catch { ROLLBACK }` does it; a multi-statement batch stops at the error too).
-- A client that ignored the error and ran its UPDATE and COMMIT anyway would write.
--
-- Why it is correct under concurrency at InnoDB's default, REPEATABLE READ:
--
-- * Locking reads. The INSERT … ON DUPLICATE KEY UPDATE below takes an exclusive row lock
--   on the resource's row in the primary key (inserting the row the first time), also
--   when the new token is lower and the row keeps its value, and InnoDB keeps it until
--   the transaction ends. Two transactions that fence the same resource therefore run one
--   after the other: the second waits for the first to commit or roll back. Its INSERT …
--   ON DUPLICATE KEY UPDATE and the SELECT … FOR UPDATE that follows are locking reads,
--   which read the newest committed version of the row, not a snapshot, so the second
--   compares against the token the first committed. The fenced writes of one resource are
--   thus committed in non-decreasing token order, and a holder with a lower token can
--   never commit after one with a higher token.
-- * Snapshot reads. A plain SELECT at REPEATABLE READ reads the snapshot that the
--   transaction's FIRST plain read took. When the fence is the transaction's first
--   statement, no snapshot exists yet while it waits (locking reads take none), so the
--   SELECTs after it see what the previous holder committed, and a read-modify-write
--   (`SELECT stock …; UPDATE … SET stock = ?`) loses no update. UPDATE and DELETE always
--   act on the newest committed rows. So: fence first. A plain SELECT before the fence,
--   or START TRANSACTION WITH CONSISTENT SNAPSHOT, would take the snapshot before the wait,
--   and a value read from it may miss the previous holder's write (read with SELECT … FOR
--   UPDATE instead, if a read must come first).
-- * Other levels. At READ COMMITTED every plain SELECT takes a fresh snapshot, so reads
--   after the fence see the previous holder's write even when other reads came first; the
--   fence's row lock is the same (a primary-key record lock, not a gap lock). At
--   SERIALIZABLE plain SELECTs become locking reads: just as safe, with more lock waits.
--   READ UNCOMMITTED still serialises the fenced transactions, but lets a read see a
--   write that is later rolled back: do not use it for fenced work. At every level a
--   deadlock (error 1213) or a lock wait timeout (1205, innodb_lock_wait_timeout) ends
--   the attempt without writing anything, and the transaction is retried as usual. On
--   MariaDB with innodb_snapshot_isolation=ON (the default from 11.6), a transaction that
--   read a snapshot before fencing fails with error 1020 when the fence row has changed
--   since, and is retried the same way.
--
-- Privileges: the procedure runs with its definer's rights (SQL SECURITY DEFINER), so the
-- application needs only EXECUTE, and cannot lower a recorded token by writing the table:
--   GRANT EXECUTE ON app.* TO 'app'@'%';
-- (grant on the database: loading the file again drops and re-creates the procedure, and a
-- grant on the procedure alone goes with it.)
--
-- The SDK's mapFencingError() (docs/client.md "Fencing in your database") turns the RLF01
-- error of any MySQL driver into a StaleFencingTokenError. examples/fenced-inventory-mysql.ts
-- shows a paused holder's late write refused.

CREATE TABLE IF NOT EXISTS raftlock_fence (
  -- binary collation: resources differ by case; a spelling that compares equal (trailing
  -- spaces) shares a fence, which can only refuse more, never less
  resource   VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
  token      BIGINT       NOT NULL,
  updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  CONSTRAINT raftlock_fence_token_nonnegative CHECK (token >= 0)
) ENGINE = InnoDB
  COMMENT = 'raftlock: the highest fencing token seen per resource (deploy/mysql/raftlock-fencing.sql)';

DROP PROCEDURE IF EXISTS raftlock_fence;

DELIMITER //
CREATE PROCEDURE raftlock_fence(IN resource VARCHAR(255) CHARACTER SET utf8mb4, IN token BIGINT)
  MODIFIES SQL DATA
  SQL SECURITY DEFINER
  COMMENT 'raftlock: SQLSTATE 45000 RLF01 when token is lower than the highest recorded for resource, else records it (deploy/mysql/raftlock-fencing.sql)'
BEGIN
  -- In a procedure an unqualified name means the parameter (a local variable wins over a
  -- column of the same name), so every column below is qualified with its table.
  DECLARE recorded BIGINT;
  DECLARE msg VARCHAR(128) CHARACTER SET utf8mb4;
  IF resource IS NULL OR token IS NULL THEN
    SIGNAL SQLSTATE '22004' SET MESSAGE_TEXT = 'raftlock_fence: resource and token must not be null';
  END IF;
  IF token < 0 THEN
    SIGNAL SQLSTATE '22003' SET MESSAGE_TEXT = 'raftlock_fence: token is negative';
  END IF;

  -- Locks the resource's row (inserting it the first time) until the transaction ends, and
  -- raises the recorded token only when the new one is at least as high. Both assignments
  -- read the row's token before this statement changes it (updated_at is assigned first).
  INSERT INTO raftlock_fence (resource, token) VALUES (resource, token)
  ON DUPLICATE KEY UPDATE
    raftlock_fence.updated_at = IF(raftlock_fence.token <= token, CURRENT_TIMESTAMP(6), raftlock_fence.updated_at),
    raftlock_fence.token = GREATEST(raftlock_fence.token, token);

  -- A locking read of the row we hold: the newest committed token, or ours.
  SELECT f.token INTO recorded FROM raftlock_fence AS f WHERE f.resource = resource COLLATE utf8mb4_bin FOR UPDATE;

  IF recorded > token THEN
    SET msg = LEFT(CONCAT('RLF01 stale fencing token ', token, ' (highest ', recorded, ') for ', resource), 128);
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
  END IF;
END //
DELIMITER ;
