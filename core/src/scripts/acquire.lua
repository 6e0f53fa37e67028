-- Acquire one server's vote.
-- KEYS[1] lock key, KEYS[2] fencing counter key; ARGV[1] token, ARGV[2] ttl in ms.
-- Returns {1, counter} when granted (free, or already held by this very token: the TTL is
-- reset), else {0, holder's PTTL, current counter}.
-- The counter is incremented before the lock key is written, so a counter of the wrong type
-- fails the script before anything changed.
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  local fence = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1, fence}
end
local fence = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
return {0, redis.call('PTTL', KEYS[1]), fence}
