-- Prepended to acquire.lua and release.lua (scripts.rs): the server's clock, the sweep of the
-- wait queue, and handing the lock to the first waiter in line (queue.rs is the Rust side).

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

-- Publishes a wake-up: sharded (SPUBLISH) on a cluster, where the channel is in the lock's
-- slot, PUBLISH elsewhere. Returns how many subscribers (on this node) received it.
local function publish_wake(publish, channel, message)
  if publish == 'SPUBLISH' then
    return redis.call('SPUBLISH', channel, message)
  end
  return redis.call('PUBLISH', channel, message)
end

-- Hands the lock to the first waiter in line that listens for it, as its own acquire would:
-- the lock key set to its token with its TTL, the fencing counter incremented, and the message
-- "COUNTER ARRIVAL TOKEN" published (with PUBLISH: 'PUBLISH', or 'SPUBLISH' on a cluster, where
-- the channel is in the lock's hash slot) on its wake-up channel (CHANNEL, '|', the first
-- WAKE_ID_LEN bytes of its token). A waiter nobody listens for (its process is gone: the
-- server closed its connections; or it is not subscribed yet) is passed over, keeping its
-- place: the lock never goes to a dead waiter, and a live one not yet listening takes its
-- turn at its next attempt. Stops at `self` (an acquire's own token): returns 'self' there,
-- true when handed to another waiter, false when nobody in line listens.
local function hand_over(lock, fence_key, queue, ttls, publish, channel, wake_id_len, self)
  local line = redis.call('ZRANGE', queue, 0, 7, 'WITHSCORES')
  local fence = nil
  for i = 1, #line, 2 do
    local token, arrival = line[i], line[i + 1]
    if token == self then
      return 'self'
    end
    local ttl = redis.call('HGET', ttls, token)
    if ttl then
      fence = fence or redis.call('INCR', fence_key)
      local wake = channel .. '|' .. string.sub(token, 1, wake_id_len)
      if publish_wake(publish, wake, fence .. ' ' .. arrival .. ' ' .. token) > 0 then
        redis.call('SET', lock, token, 'PX', ttl)
        return true
      end
    end
  end
  return false
end
