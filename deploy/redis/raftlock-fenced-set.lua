-- raftlock fencing for Redis: set a data key only if the writer's fencing token is not
-- stale, as one atomic step. Redis 6.0 and later (and Valkey); no module, no configuration.
--
--   EVAL <this script> 2 <fence-key> <data-key> <token> <value>
--   redis-cli --eval deploy/redis/raftlock-fenced-set.lua fence:invoice/42 invoice/42:status , 12 paid
--
-- When <token> is at least the token recorded in <fence-key> (or none is), records it
-- there, sets <data-key> to <value> (a plain SET: any old value, type or TTL of the key is
-- replaced) and returns 1. When <token> is lower, nothing is written and the reply is an
-- error that starts with RLF01, as from deploy/redis/raftlock-fence.lua:
-- `RLF01 stale fencing token 4 (highest 5) for fence:invoice/42`. An equal token is
-- allowed. A token is a decimal integer from 0 to 2^63-1; anything else, or a fence key
-- holding something else, is refused with an ERR reply and writes nothing.
--
-- For a read-modify-write, fence before reading (raftlock-fence.lua), then read, then
-- write with this script: a holder paused between its read and its write is then refused
-- once a newer holder has fenced, so no update is lost.
--
-- Why it is atomic: Redis runs a script as one command, and executes commands one at a
-- time: no other client's command runs between the script's check of the fence and its
-- writes. Everything is checked before anything is written (a script that fails half-way
-- keeps its earlier writes). Both writes reach replicas and the AOF as one MULTI/EXEC.
--
-- What it does not survive: a failover to a replica that had not yet received the newest
-- fence and data. Replication is asynchronous, so an acknowledged fenced write can be lost
-- with the primary, and the promoted replica then accepts an older token again. WAIT
-- narrows the window but does not close it; see raftlock-fence.lua for this limit, and for
-- eviction (the fence key needs no TTL and a noeviction or volatile-* policy) and Redis
-- Cluster (fence and data key in one hash slot: `{invoice:42}:fence`, `{invoice:42}:status`).
--
-- The SDK exports this script's code as FENCED_SET_LUA and maps its RLF01 reply from any
-- Redis driver to a StaleFencingTokenError (docs/client.md "Fencing in your database").

if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('ERR raftlock fenced set: usage EVAL script 2 <fence-key> <data-key> <token> <value>')
end
local fence, data, token, value = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
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
  return redis.error_reply('ERR raftlock fenced set: token must be an integer from 0 to 9223372036854775807')
end
local recorded = redis.call('GET', fence)
if recorded and not canonical(recorded) then
  return redis.error_reply('ERR raftlock fenced set: ' .. fence .. ' does not hold a fencing token')
end
if recorded and below(token, recorded) then
  return redis.error_reply('RLF01 stale fencing token ' .. token .. ' (highest ' .. recorded .. ') for ' .. fence)
end
-- the fence first: should the data write fail (it cannot, once a write has succeeded:
-- Redis refuses a script for memory only before its first write), a raised fence costs
-- liveness, never safety
if recorded ~= token then redis.call('SET', fence, token) end
redis.call('SET', data, value)
return 1
