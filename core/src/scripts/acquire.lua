-- Acquire one server's vote, first come first served.
-- KEYS[1] lock key, KEYS[2] fencing counter key, KEYS[3] wait queue (token -> arrival),
-- KEYS[4] queue deadlines (token -> server time in ms after which the place is forgotten).
-- ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] empty, or "ARRIVAL LASTS" to take (or keep) a
-- place in the queue when refused: ARRIVAL is the waiter's own clock in microseconds (the same
-- on every server), LASTS how long the place is kept without a new attempt, in ms. (Few
-- arguments: a server refuses more than 10 from a client that has not authenticated, and
-- that client must get the server's NOAUTH reply, not a protocol error.)
-- Returns {1, counter} when granted (free and no earlier waiter in line, or already held by
-- this very token: the TTL is reset), else {0, holder's PTTL, current counter} (PTTL -2 when
-- the key is free but an earlier waiter is first in line).
-- The counter is incremented before the lock key is written, so a counter of the wrong type
-- fails the script before anything changed.
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
-- Waiters that stopped trying (gave up, crashed, partitioned) lose their place.
local gone = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'LIMIT', 0, 100)
if #gone > 0 then
  redis.call('ZREM', KEYS[3], unpack(gone))
  redis.call('ZREM', KEYS[4], unpack(gone))
end
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] or holder == false then
  local first = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if holder == ARGV[1] or first == nil or first == ARGV[1] then
    local fence = redis.call('INCR', KEYS[2])
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    if first ~= nil then
      redis.call('ZREM', KEYS[3], ARGV[1])
      redis.call('ZREM', KEYS[4], ARGV[1])
    end
    return {1, fence}
  end
end
local arrival, lasts = string.match(ARGV[3], '^(%d+) (%d+)$')
if arrival then
  lasts = tonumber(lasts)
  redis.call('ZADD', KEYS[3], 'NX', arrival, ARGV[1])
  redis.call('ZADD', KEYS[4], now + lasts, ARGV[1])
  redis.call('PEXPIRE', KEYS[3], lasts)
  redis.call('PEXPIRE', KEYS[4], lasts)
end
local fence = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
return {0, redis.call('PTTL', KEYS[1]), fence}
