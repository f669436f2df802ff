// The Redis fencing scripts (deploy/redis/raftlock-fence.lua, raftlock-fenced-set.lua;
// docs/client.md "Fencing in your database"), their code without the files' explanatory
// headers, for EVAL / EVALSHA (or ioredis' defineCommand) through whatever Redis client a
// service already has. test/redis checks that these texts are the files' code, to the byte.
// A refusal is an error reply starting with RLF01; mapFencingError turns it into a
// StaleFencingTokenError.

/**
 * `EVAL FENCE_LUA 1 <fence-key> <token>`: 1 after recording `token` in `fence-key` when it
 * is at least the recorded token; an `RLF01 stale fencing token …` error reply, writing
 * nothing, when it is lower. Fence before reading, for a read-modify-write.
 */
export const FENCE_LUA = `if #KEYS ~= 1 or #ARGV ~= 1 then
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
`;

/**
 * `EVAL FENCED_SET_LUA 2 <fence-key> <data-key> <token> <value>`: the same check, and in
 * the same atomic step `SET data-key value`; 1, or the RLF01 error reply with nothing
 * written.
 */
export const FENCED_SET_LUA = `if #KEYS ~= 2 or #ARGV ~= 2 then
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
`;
