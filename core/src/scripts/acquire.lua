-- Acquire one server's vote (run after queue.lua); a free lock goes to the first waiter in
-- line for a moment after a release.
-- KEYS[1] lock key, KEYS[2] fencing counter key, KEYS[3] wait queue (token -> arrival),
-- KEYS[4] queue deadlines (token -> server time in ms after which the place is forgotten; the
-- member '' is the end of the first waiter's turn, set by a release that woke it).
-- ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] empty, or "ARRIVAL LASTS" to take (or keep) a
-- place in the queue when refused: ARRIVAL is the waiter's own clock in microseconds (the same
-- on every server), LASTS how long the place is kept without a new attempt, in ms. (Few
-- arguments: a server refuses more than 10 from a client that has not authenticated, and
-- that client must get the server's NOAUTH reply, not a protocol error.)
-- Returns {1, counter} when granted (free and not the first waiter's turn, or this is the first
-- waiter, or already held by this very token: the TTL is reset), else {0, PTTL, counter}:
-- the holder's PTTL, or when the key is free during the first waiter's turn, what is left of
-- that turn.
-- A place is kept after a grant (removed by the release), so that a holder refused on one
-- server and retrying is still first in line there.
-- The counter is incremented before the lock key is written, so a counter of the wrong type
-- fails the script before anything changed.
-- The uncontended path reads two keys and writes two: the queue is looked at only during a
-- first waiter's turn or when taking a place.
local holder = redis.call('GET', KEYS[1])
local now = nil -- the server's clock, once the queue was swept
local pttl = nil
if holder == ARGV[1] or holder == false then
  local turn = redis.call('ZSCORE', KEYS[4], '')
  local first = nil
  if turn then
    now = now_ms()
    sweep(KEYS[3], KEYS[4], now)
    turn = redis.call('ZSCORE', KEYS[4], '')
    if turn then
      first = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
    end
  end
  if holder == ARGV[1] or first == nil or first == ARGV[1] then
    local fence = redis.call('INCR', KEYS[2])
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    if turn then
      redis.call('ZREM', KEYS[4], '')
    end
    return {1, fence}
  end
  pttl = math.max(tonumber(turn) - now, 1)
end
local arrival, lasts = string.match(ARGV[3], '^(%d+) (%d+)$')
if arrival then
  if now == nil then
    now = now_ms()
    sweep(KEYS[3], KEYS[4], now)
  end
  lasts = tonumber(lasts)
  redis.call('ZADD', KEYS[3], 'NX', arrival, ARGV[1])
  redis.call('ZADD', KEYS[4], now + lasts, ARGV[1])
  if redis.call('PTTL', KEYS[3]) < lasts then
    redis.call('PEXPIRE', KEYS[3], lasts)
  end
  if redis.call('PTTL', KEYS[4]) < lasts then
    redis.call('PEXPIRE', KEYS[4], lasts)
  end
end
local fence = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
return {0, pttl or redis.call('PTTL', KEYS[1]), fence}
