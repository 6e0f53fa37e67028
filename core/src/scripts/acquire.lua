-- Acquire one server's vote (run after queue.lua).
-- KEYS (the order of keys.rs and scripts.rs): [1] lock key, [2] fencing counter, [3] wait
-- queue (token -> arrival), [4] queue deadlines (token -> server time in ms after which the
-- place is forgotten), [5] the waiters' TTLs (token -> ttl in ms, for the release that hands
-- the lock over).
-- ARGV[1] token, ARGV[2] "TTL" (ms), or "TTL ARRIVAL LASTS" to take (or keep) a place in the
-- queue when refused (packed by scripts.rs): ARRIVAL is the waiter's own clock in
-- microseconds (the same on every server), LASTS how long the place is kept without a new
-- attempt, in ms.
-- Returns {1, counter} when granted (free, or already held by this very token: the TTL is
-- reset; a lock handed over to this token by a release is such a case), else
-- {0, PTTL, counter}: the holder's PTTL.
-- While anyone waits the lock is never free: a release hands it straight to the first in line.
-- A place is kept after a grant (removed by the release), so that a holder refused on one
-- server and retrying is still first in line there.
-- The counter is incremented before the lock key is written, so a counter of the wrong type
-- fails the script before anything changed.
-- The uncontended path reads one key and writes two.
local ttl, arrival, lasts = string.match(ARGV[2], '^(%d+) (%d+) (%d+)$')
ttl = ttl or ARGV[2]
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] or holder == false then
  local fence = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
  return {1, fence}
end
if arrival then
  local now = now_ms()
  sweep(KEYS[3], KEYS[4], KEYS[5], now)
  lasts = tonumber(lasts)
  redis.call('ZADD', KEYS[3], 'NX', arrival, ARGV[1])
  redis.call('ZADD', KEYS[4], now + lasts, ARGV[1])
  redis.call('HSET', KEYS[5], ARGV[1], ttl)
  for i = 3, 5 do
    if redis.call('PTTL', KEYS[i]) < lasts then
      redis.call('PEXPIRE', KEYS[i], lasts)
    end
  end
end
local fence = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
return {0, redis.call('PTTL', KEYS[1]), fence}
