-- Release a permit lease, and hand what it freed to the waiters at the head of the line
-- (after queue.lua and permits.lua; scripts.rs).
-- KEYS: as permits.lua, all six.
-- ARGV[1] token; ARGV[2] "PUBLISH MODE WAKE_ID_LEN CHANNEL" (packed by scripts/permits.rs):
-- MODE as for a lock (release_queued.lua): '0' keeps the token's place in line (a failed
-- attempt's undo), '1' and '3' give it up too (a holder's release, a waiter that stops), '2'
-- gives up the place only.
-- Returns 1 when released, 0 when the lease was gone (ended, or never granted here); in mode
-- 2, 2 when the token had no place in line and holds a lease, else 0.
local publish, mode, wake_id_len, channel = string.match(ARGV[2], '^(%S+) ([0-3]) (%d+) (.*)$')
local k = {key = KEYS[1], holders = KEYS[2], fence = KEYS[3], queue = KEYS[4],
  deadlines = KEYS[5], ttls = KEYS[6], publish = publish, channel = channel,
  wake_id_len = tonumber(wake_id_len)}
local token = ARGV[1]
local placed = mode ~= '0' and redis.call('ZREM', k.queue, token) == 1
if placed then
  redis.call('ZREM', k.deadlines, token)
  redis.call('HDEL', k.ttls, token)
end
local state, err = read_meta(k.key, nil, nil, token)
if err then
  return err
end
local now = now_ms()
-- Whether anyone is in line: as the lean part read it (permits_release_lean.lua), unless
-- this call just took a place out of the line.
local queued
if queue_left ~= nil and not placed then
  queued = queue_left ~= -2
else
  queued = redis.call('EXISTS', k.queue) == 1
end
if mode == '2' then
  if not queued and redis.call('EXISTS', k.holders) == 0 then
    redis.call('DEL', k.key)
  end
  -- A lease of a token no longer in line may have been handed to its place (hand_out takes
  -- the place): 2 says so, as release_queued.lua's mode 2 does.
  if not placed and redis.call('ZSCORE', k.holders, token) then
    return 2
  end
  return 0
end
reclaim(k.key, k.holders, state, now, token)
local released = 0
if state.mine then
  state.held = state.held - state.mine
  redis.call('HDEL', k.key, '=' .. token)
  redis.call('ZREM', k.holders, token)
  released = 1
end
if queued and state.limit then
  sweep(k.queue, k.deadlines, k.ttls, now)
  local _, held = hand_out(k, state.held, state.limit, now, nil)
  -- The weights held: a grant of hand_out's wrote them with its holder's.
  if released == 1 and held == state.held then
    redis.call('HSET', k.key, 'held', state.held)
  end
  return released
end
if released == 1 then
  redis.call('HSET', k.key, 'held', state.held)
end
if not queued and redis.call('EXISTS', k.holders) == 0 then
  -- Nobody holds or waits: the kind and the limit go too.
  redis.call('DEL', k.key)
end
return released
