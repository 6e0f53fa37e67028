-- Acquire a permit lease. The whole script is this file, queue.lua, permits.lua, then
-- permits_acquire.lua (scripts/permits.rs): this first part is the uncontended path, which
-- returns before the helpers are even defined (as acquire.lua does for a lock).
-- KEYS and ARGV: as permits_acquire.lua.
--
-- Uncontended: nobody in line (the queue's key does not exist: no waiter can be passed), the
-- name's key of this kind and limit (or no key at all), this token holding no lease of it
-- (re-entry and an attempt's own votes take the full path), and the weight fitting beside the
-- weights held. Leases that ended but were not given back yet still count here: a caller that
-- needs their weight takes the full path, which gives it back first. The counter's INCR comes
-- before any write, so that a counter of the wrong type fails the script with nothing changed.
-- A fresh name costs nine commands, a name with other holders eight or ten (the keys' upkeep).
local queue_left = redis.call('PTTL', KEYS[4])
if queue_left == -2 then
  local ttl, kind, limit, weight =
    string.match(ARGV[2], '^%S+ (%d+) %d+ %d+ %d+ [01] ([srw]) (%d+) (%d+) ')
  local meta = redis.pcall('HMGET', KEYS[1], 'kind', 'limit', 'held', '=' .. ARGV[1])
  local name = kind == 's' and 'semaphore' or 'rwlock'
  local ours = meta.err == nil and meta[4] == false
  local fresh = ours and meta[1] == false and redis.call('EXISTS', KEYS[1]) == 0
  local held = tonumber(weight) + (tonumber(meta[3]) or 0)
  local same = ours and meta[1] == name and meta[2] == limit
  -- The leases' key, read before any write; gone while weights are counted, it expired
  -- after every lease ended: the full path gives their weights back (permits.lua's reclaim).
  local leases_left = same and held <= tonumber(limit) and redis.call('PTTL', KEYS[2]) or -2
  local stale = leases_left == -2 and (tonumber(meta[3]) or 0) > 0
  if (fresh or same and not stale) and held <= tonumber(limit) then
    local fence = redis.call('INCR', KEYS[3])
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    ttl = tonumber(ttl)
    if fresh then
      redis.call('HSET', KEYS[1], 'kind', name, 'limit', limit, 'held', held,
        '=' .. ARGV[1], weight)
      redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
      redis.call('PEXPIRE', KEYS[1], 2 * ttl)
      redis.call('PEXPIRE', KEYS[2], 2 * ttl)
      return {1, fence}
    end
    redis.call('HSET', KEYS[1], 'held', held, '=' .. ARGV[1], weight)
    redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
    -- The keys' upkeep (permits.lua's upkeep).
    if leases_left < ttl then
      redis.call('PEXPIRE', KEYS[2], 2 * ttl)
      if redis.call('PTTL', KEYS[1]) < 2 * ttl then
        redis.call('PEXPIRE', KEYS[1], 2 * ttl)
      end
    end
    return {1, fence}
  end
end
-- Someone is in line, the weight does not fit, the token holds a lease, or the name is not
-- this kind's: permits_acquire.lua decides, and names the error (QUEUE_LEFT, the queue's
-- PTTL, is its too).
