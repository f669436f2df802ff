-- raftlock fencing for Redis: raise a resource's fence to a fencing token, or refuse a
-- stale one. Redis 6.0 and later (and Valkey); no module, no configuration.
--
--   EVAL <this script> 1 <fence-key> <token>
--   redis-cli --eval deploy/redis/raftlock-fence.lua fence:invoice/42 , 12
--
-- Returns 1 when <token> is at least the token recorded in <fence-key> (or none is),
-- after recording it. When <token> is lower, nothing is written and the reply is an error
-- that starts with RLF01: `RLF01 stale fencing token 4 (highest 5) for fence:invoice/42`.
-- An equal token is allowed: the same holder may write several times under one grant.
-- A token is a decimal integer from 0 to 2^63-1 (a lock's fencing token); anything else,
-- or a fence key holding something else, is refused with an ERR reply and writes nothing.
--
-- Its companion deploy/redis/raftlock-fenced-set.lua checks the same way and sets a data
-- key in the same step. Use this one to fence BEFORE READING, for a read-modify-write:
--
--   EVAL raftlock-fence.lua 1 fence:stock 12             -- from now on tokens < 12 are refused
--   GET stock                                            -- reads what every older holder wrote
--   EVAL raftlock-fenced-set.lua 2 fence:stock stock 12 <new value>
--
-- A holder paused between its read and its write is refused at the write once a newer
-- holder has fenced, so no update is lost. Only a write made inside a script that checks
-- the fence is fenced: a plain SET after this script is not (another holder may fence and
-- write in between); write your own script beginning with the same check for other writes.
--
-- Why it is atomic: Redis runs a script as one command. The server executes commands one
-- at a time, so no other client's command runs between the script's GET and its SET, and
-- the check and the write cannot be separated. The script checks everything before it
-- writes anything (a script that fails half-way keeps its earlier writes; this one has
-- none to keep). Its writes reach replicas and the AOF as one MULTI/EXEC, so a replica
-- or a restart from the AOF applies all of them or none.
--
-- What it does not survive — the limits of Redis itself, not of the script:
-- * Failover. Replication is asynchronous: a primary acknowledges a write before any
--   replica has it. If the primary dies and Sentinel or Redis Cluster promotes a replica
--   that had not received the newest fence, the fence goes back to an older token, and
--   a stale holder's write is accepted again. `WAIT <replicas> <ms>` after a fenced write
--   narrows the window but does not close it. Where a lost fence is not acceptable, keep
--   the data in a store that commits synchronously to a quorum (PostgreSQL with a
--   synchronous standby, MySQL Group Replication, etcd) and fence it there.
-- * Eviction, expiry and deletion. A fence key must live as long as the data it guards:
--   give it no TTL, and run with maxmemory-policy noeviction or a volatile-* policy (which
--   evicts only keys that have a TTL). An allkeys-* policy may evict the fence and let a
--   stale token in. FLUSHALL or DEL of the fence key does the same.
-- * Persistence. After a restart the fence is as old as the data (both come from the same
--   RDB or AOF), so a restart loses no fence that still guards data it kept.
-- In Redis Cluster the fence key and the data keys of one script must hash to one slot:
-- name them with a hash tag, e.g. `{invoice:42}:fence` and `{invoice:42}:status`.
--
-- The SDK exports this script's code as FENCE_LUA and maps its RLF01 reply from any Redis
-- driver to a StaleFencingTokenError (docs/client.md "Fencing in your database").

if #KEYS ~= 1 or #ARGV ~= 1 then
  return redis.error_reply('ERR raftlock fence: usage EVAL script 1 <fence-key> <token>')
end
local fence, token = KEYS[1], ARGV[1]
-- Tokens are compared as decimal text, digit by digit: Lua's numbers are doubles (exact
-- only to 2^53), and Lua compares strings in the server's locale.
local function below(a, b)
  if #a ~= #b then return #a < #b end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return false
end
local function canonical(t)
  return (t == '0' or string.match(t, '^[1-9]%d*$') ~= nil) and not below('9223372036854775807', t)
end
if not canonical(token) then
  return redis.error_reply('ERR raftlock fence: token must be an integer from 0 to 9223372036854775807')
end
local recorded = redis.call('GET', fence)
if recorded and not canonical(recorded) then
  return redis.error_reply('ERR raftlock fence: ' .. fence .. ' does not hold a fencing token')
end
if recorded and below(token, recorded) then
  return redis.error_reply('RLF01 stale fencing token ' .. token .. ' (highest ' .. recorded .. ') for ' .. fence)
end
if recorded ~= token then redis.call('SET', fence, token) end
return 1
