-- Prepended to acquire.lua and release.lua (scripts.rs): the server's clock, and the sweep of
-- the wait queue.

-- The server's clock in milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Waiters that stopped trying (gave up, crashed, partitioned) lose their place, and a first
-- waiter's turn that ran out ends (the member '' of the deadlines).
local function sweep(queue, deadlines, now)
  local gone = redis.call('ZRANGEBYSCORE', deadlines, '-inf', now, 'LIMIT', 0, 100)
  if #gone > 0 then
    redis.call('ZREM', queue, unpack(gone))
    redis.call('ZREM', deadlines, unpack(gone))
  end
end

