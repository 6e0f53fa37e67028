-- Acquire a permit lease: a semaphore's permits, a read share or a write hold (after
-- queue.lua and permits.lua; scripts.rs).
-- KEYS: as permits.lua, all six.
-- ARGV[1] token, ARGV[2] "PUBLISH TTL WAKE_ID_LEN ARRIVAL LASTS OWN KIND LIMIT WEIGHT CHANNEL"
-- (packed by scripts/permits.rs): PUBLISH, TTL, WAKE_ID_LEN, ARRIVAL, LASTS, OWN and CHANNEL
-- as for a lock (acquire_queued.lua); KIND 's' (semaphore), 'r' (read) or 'w' (write);
-- LIMIT the name's capacity; WEIGHT what this lease takes of it (kind.rs).
-- Returns {1, counter} when granted, else {0, WAIT, counter, SAME}: WAIT how long until the
-- first lease ends (ms; -2 when none is held), SAME 1 when this token already holds a lease
-- of the name for another acquisition.
-- Granted when the weight fits beside the leases held and nobody in line that listens comes
-- first: a newcomer never passes a waiter, also one that needs more than is free (first come,
-- first served; no starvation); with someone in line the caller takes its place by its
-- arrival (a waiter whose place expired gets its turn back), the waiters ahead of it that fit
-- are handed their leases first (hand_out), then this caller if it still fits, then those
-- behind it that fit beside it.
local publish, ttl, wake_id_len, arrival, lasts, own, kind, limit, weight, channel =
  string.match(ARGV[2], '^(%S+) (%d+) (%d+) (%d+) (%d+) ([01]) ([srw]) (%d+) (%d+) (.*)$')
local k = {key = KEYS[1], holders = KEYS[2], fence = KEYS[3], queue = KEYS[4],
  deadlines = KEYS[5], ttls = KEYS[6], publish = publish, channel = channel,
  wake_id_len = tonumber(wake_id_len)}
-- The waiter's entry keeps the numbers as sent: Lua writes a number as large as a writer's
-- weight (2^50) with 14 digits.
local entry = 'p' .. weight .. ' ' .. ttl
ttl, weight, lasts = tonumber(ttl), tonumber(weight), tonumber(lasts)
local capacity = tonumber(limit)
local state, err = read_meta(k.key, kind, limit, ARGV[1])
if err then
  return err
end
local now = now_ms()
local token = ARGV[1]
-- The first lease's end while it is known (reclaim gave nothing back, nothing granted since;
-- false: none held), else nil.
local lease_end = reclaim(k.key, k.holders, state, now, token)
local held, mine = state.held, state.mine
local same, placed, queue_pttl = 0, false, nil
if mine then
  if mine ~= weight then
    if kind == 's' then
      return redis.error_reply('FENCELOCK_INVALID this token holds ' .. mine ..
        ' permits of the semaphore; this call asks for ' .. weight)
    end
    local shown = kind == 'w' and {'a read share', 'write'} or {'the write hold', 'read'}
    return redis.error_reply('FENCELOCK_WRONGKIND this token holds ' .. shown[1] ..
      ' of the read-write lock: asking to ' .. shown[2] .. ' with it would wait for itself')
  end
  if own == '1' then
    -- This call's own lease (a vote of an earlier attempt, a handoff, or re-entry): renewed.
    return {1, grant(k, token, weight, ttl, now, held, kind, limit, true)}
  end
  same = 1
elseif held + weight <= capacity then
  local first = redis.call('ZRANGE', k.queue, 0, 0)[1]
  local fits = first == nil
  if not fits then
    lease_end = nil
    sweep(k.queue, k.deadlines, k.ttls, now)
    if arrival ~= '0' then
      -- The caller's place first, where its arrival puts it: a waiter whose place expired
      -- gets its turn back, whether or not the sweep had come (as acquire_queued.lua).
      take_place(k.queue, k.deadlines, k.ttls, token, arrival, lasts, entry, now)
      placed = true
    end
    local stop
    stop, held = hand_out(k, held, capacity, now, token)
    fits = stop ~= 'blocked' and held + weight <= capacity
  end
  if fits then
    local fence = grant(k, token, weight, ttl, now, held + weight, kind, limit, first ~= nil)
    if first ~= nil then
      -- Those behind the caller that fit beside it are handed theirs, as a release would hand
      -- them (a caller woken first, on a Redis 6.2 cluster, leaves room behind it that nobody
      -- told).
      hand_out(k, held + weight, capacity, now, nil)
    end
    return {1, fence}
  end
end
if arrival ~= '0' and same == 0 then
  if not placed then
    -- Nothing has touched the line since the lean part read its PTTL (QUEUE_LEFT): the sweep
    -- and hand-out above run only when they place the caller.
    queue_pttl = select(2, take_place(k.queue, k.deadlines, k.ttls, token, arrival, lasts,
      entry, now, queue_left))
  end
  if state.fresh then
    redis.call('HSET', k.key, 'kind', KINDS[kind], 'limit', limit, 'held', held)
  end
  upkeep_queue(k, queue_pttl)
end
local fence = tonumber(redis.call('GET', k.fence) or '0') or 0
return {0, first_end(k.holders, now, lease_end), fence, same}
