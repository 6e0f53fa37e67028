-- Prepended to acquire.lua and release.lua (scripts.rs): the server's clock, and the sweep of
-- the wait queue.

-- The server's clock in milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Waiters that stopped trying (gave up, crashed, partitioned) lose their place: the queue
-- (token -> arrival), its deadlines (token -> server time) and the waiters' TTLs (a hash).
local function sweep(queue, deadlines, ttls, now)
  local gone = redis.call('ZRANGEBYSCORE', deadlines, '-inf', now, 'LIMIT', 0, 100)
  if #gone > 0 then
    redis.call('ZREM', queue, unpack(gone))
    redis.call('ZREM', deadlines, unpack(gone))
    redis.call('HDEL', ttls, unpack(gone))
  end
end
