-- Acquire, when someone is in line or the key is held (after acquire.lua and queue.lua).
-- KEYS: as acquire.lua.
-- ARGV[1] token, ARGV[2] "PUBLISH TTL WAKE_ID_LEN ARRIVAL LASTS OWN CHANNEL" (packed by
-- scripts.rs): PUBLISH the command that wakes a waiter ('PUBLISH', or 'SPUBLISH' on a
-- cluster); TTL in ms; WAKE_ID_LEN and CHANNEL name the waiters' wake-up channels (see
-- hand_over in queue.lua); ARRIVAL and LASTS, when not 0, take (or keep) a place in the queue
-- when refused: ARRIVAL is the waiter's own clock in microseconds (the same on every server),
-- LASTS how long the place is kept without a new attempt, in ms; OWN '1' when a key already
-- holding the token is this call's (a token of its own, re-entry asked for, an earlier
-- attempt of the call that this server may have granted, or a release that handed it to this
-- call's place), '0' when it is another acquisition's with the same caller token.
-- Returns {1, counter} when granted (held by this call's token: the TTL is reset, a lock
-- handed over to this token by a release is such a case; or free with nobody listening in
-- line ahead of this token), else {0, PTTL, counter, SAME}: the holder's PTTL, and SAME 1
-- when the holder is this token (another caller's acquisition with it).
-- While anyone waits the lock is never free for a newcomer: a release hands it straight to
-- the first in line, and a key found expired goes to the first in line that listens, not to
-- a caller behind it (nor to one not in line at all); a waiter for several names first in
-- line is woken instead, and the name stays free for it.
-- A place is kept after a grant (removed by the release), so that a holder refused on one
-- server and retrying is still first in line there; a grant takes no place the caller had not.
-- The counter is incremented before the lock key is written, so a counter of the wrong type
-- fails the script before anything changed.
local publish, ttl, wake_id_len, arrival, lasts, own, channel =
  string.match(ARGV[2], '^(%S+) (%d+) (%d+) (%d+) (%d+) ([01]) (.*)$')
wake_id_len = tonumber(wake_id_len)
lasts = tonumber(lasts)
local function grant()
  local fence = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
  return {1, fence}
end
local holder, err = holder_of(KEYS[1])
if err then
  return err
end
local same = 0
if holder == ARGV[1] then
  if own == '1' then
    return grant()
  end
  same = 1
end
-- The caller's place is taken (or refreshed) before a free key is given: the key goes by
-- arrival, the caller's included, whether or not a place whose time came was swept yet (a
-- caller whose place expired while its attempt was on the way gets its arrival's turn back).
-- A grant keeps a place the caller had (its time not come: places whose time came are swept
-- first), and takes none it had not.
local placed = false
if arrival ~= '0' then
  local now = now_ms()
  -- A sweep that removed places may have removed the queue: its PTTL is read again.
  if sweep(KEYS[3], KEYS[4], KEYS[5], now) > 0 then
    queue_pttl = nil
  end
  placed = take_place(KEYS[3], KEYS[4], KEYS[5], ARGV[1], arrival, lasts, ttl, now, queue_pttl) == 0
end
local function grant_in_line()
  if arrival ~= '0' and not placed then
    redis.call('ZREM', KEYS[3], ARGV[1])
    redis.call('ZREM', KEYS[4], ARGV[1])
    redis.call('HDEL', KEYS[5], ARGV[1])
  end
  return grant()
end
if holder == false then
  local first = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if first == nil or first == ARGV[1] then
    return grant_in_line()
  end
  if arrival == '0' then
    sweep(KEYS[3], KEYS[4], KEYS[5], now_ms()) -- with a place, swept above
  end
  local handed = hand_over(KEYS[1], KEYS[2], KEYS[3], KEYS[5], publish, channel, wake_id_len, ARGV[1])
  if handed == false or handed == 'self' then
    return grant_in_line()
  end
end
local fence = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
return {0, redis.call('PTTL', KEYS[1]), fence, same}
