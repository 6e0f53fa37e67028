-- Compare-and-delete, and hand the lock to the first waiter in line (after queue.lua).
-- KEYS[1] lock key, KEYS[2] wait queue, KEYS[3] queue deadlines, KEYS[4] the waiters' TTLs,
-- KEYS[5] fencing counter key; ARGV[1] token, ARGV[2] '1' to give up this token's place in
-- the queue too (a holder's release, a waiter that stops waiting) or '0' to keep it (a failed
-- attempt's undo), followed by the release channel.
-- Returns 1 when released, 0 when the key was gone, -1 when another token holds it.
-- On release, when someone waits, the lock goes straight to the first waiter still in line: the
-- key is set to its token with its TTL and the fencing counter incremented, as its own acquire
-- would, and it is told on its channel (the channel, '|', the first 16 bytes of its token:
-- token.rs WAKE_ID_LEN) with the message "COUNTER ARRIVAL TOKEN": the fencing counter, its
-- place's arrival (which names the acquire call the place belongs to) and its token. Its TTL
-- started after its place was taken, which its own clock can bound. The others keep their
-- places and sleep.
-- The uncontended path (nobody queued) reads the queue and the key and deletes the key.
local leave = string.sub(ARGV[2], 1, 1) == '1'
local channel = string.sub(ARGV[2], 2)
local queued = redis.call('ZRANGE', KEYS[2], 0, 0)[1] ~= nil
if leave and queued then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[1])
end
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  if not queued then
    redis.call('DEL', KEYS[1])
    return 1
  end
  sweep(KEYS[2], KEYS[3], KEYS[4], now_ms())
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  local ttl = first[1] and redis.call('HGET', KEYS[4], first[1])
  if ttl then
    local fence = redis.call('INCR', KEYS[5])
    redis.call('SET', KEYS[1], first[1], 'PX', ttl)
    redis.call('PUBLISH', channel .. '|' .. string.sub(first[1], 1, 16),
      fence .. ' ' .. first[2] .. ' ' .. first[1])
  else
    redis.call('DEL', KEYS[1])
    if first[1] then
      -- A place without a TTL (not left by this version): wake it to try.
      redis.call('PUBLISH', channel .. '|' .. string.sub(first[1], 1, 16), '0 0 ' .. first[1])
    end
  end
  return 1
end
if holder == false then
  return 0
end
return -1
