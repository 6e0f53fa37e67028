-- Acquire one server's vote for several names at once, all or none (run after queue.lua).
-- KEYS: for each name, the five keys of acquire.lua in their order ([lock, fencing counter,
-- wait queue, queue deadlines, waiters' TTLs]), name after name.
-- On a cluster the slot guard follows (keys.rs), never read.
-- ARGV[1] token, ARGV[1 + i] the release channel of name i, and last "PUBLISH TTL WAKE_ID_LEN
-- ARRIVAL LASTS OWN" as in acquire.lua (last, where a cluster's call names SPUBLISH).
-- With ARRIVAL not 0 the call first takes (or refreshes) its place in every name's queue,
-- where its arrival puts it (a waiter whose place expired gets its turn back, whether or not
-- a sweep had come: as acquire_queued.lua), as a waiter of several names ('m' and the TTL: a
-- release wakes it instead of handing it one name alone).
-- A name is then free for this call as for acquire.lua: its key absent with nobody listening
-- in line ahead of this call (a waiter ahead gets it handed over, or is woken when it too
-- waits for several names), or holding this call's token with OWN '1'. When every name is
-- free, each counter is incremented and every key set to the token with TTL, and the call
-- keeps only the places it had before: returns {1, counter of name 1, ..., counter of name n}.
-- Otherwise nothing is written but the queues (the places stay), and it returns
-- {0, PTTL, counter 1, ..., counter n, SAME}: the longest PTTL of the names not free (-1: one
-- has no expiry; -2: none is held, a waiter ahead was served first), and SAME 1 when one is
-- held by this token for another acquisition.
local publish, ttl, wake_id_len, arrival, lasts, own =
  string.match(ARGV[#ARGV], '^(%S+) (%d+) (%d+) (%d+) (%d+) ([01])$')
wake_id_len = tonumber(wake_id_len)
lasts = tonumber(lasts)
local token = ARGV[1]
local n = math.floor(#KEYS / 5)
local function key(i, j)
  return KEYS[(i - 1) * 5 + j]
end
local placed = {}
if arrival ~= '0' then
  local now = now_ms()
  for i = 1, n do
    sweep(key(i, 3), key(i, 4), key(i, 5), now)
    placed[i] = take_place(key(i, 3), key(i, 4), key(i, 5), token, arrival, lasts, 'm' .. ttl,
      now) == 0
  end
end
local blocked, same, pttl = false, 0, -2
for i = 1, n do
  local holder, err = holder_of(key(i, 1))
  if err then
    return err
  end
  local free = false
  if holder == token then
    if own == '1' then
      free = true
    else
      same = 1
    end
  elseif holder == false then
    local first = redis.call('ZRANGE', key(i, 3), 0, 0)[1]
    if first == nil or first == token then
      free = true
    else
      if arrival == '0' then
        sweep(key(i, 3), key(i, 4), key(i, 5), now_ms()) -- with a place, swept above
      end
      local handed = hand_over(key(i, 1), key(i, 2), key(i, 3), key(i, 5), publish, ARGV[1 + i],
        wake_id_len, token)
      free = handed == false or handed == 'self'
    end
  end
  if not free then
    blocked = true
    local left = redis.call('PTTL', key(i, 1))
    if left == -1 or (pttl ~= -1 and left > pttl) then
      pttl = left
    end
  end
end
if not blocked then
  local granted = {1}
  for i = 1, n do
    granted[i + 1] = redis.call('INCR', key(i, 2))
  end
  for i = 1, n do
    redis.call('SET', key(i, 1), token, 'PX', ttl)
    if arrival ~= '0' and not placed[i] then
      redis.call('ZREM', key(i, 3), token)
      redis.call('ZREM', key(i, 4), token)
      redis.call('HDEL', key(i, 5), token)
    end
  end
  return granted
end
local refused = {0, pttl}
for i = 1, n do
  refused[i + 2] = tonumber(redis.call('GET', key(i, 2)) or '0') or 0
end
refused[n + 3] = same
return refused
