-- Between acquire.lua and acquire_queued.lua, release.lua and release_queued.lua, and before
-- acquire_many.lua and release_many.lua (scripts.rs): the server's clock, the sweep of the
-- wait queue, and handing the lock to the first waiter in line (queue.rs is the Rust side).

-- The server's clock in milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Waiters that stopped trying (gave up, crashed, partitioned) lose their place: the queue
-- (token -> arrival), its deadlines (token -> server time) and the waiters' TTLs (a hash).
-- Returns how many it removed.
local function sweep(queue, deadlines, ttls, now)
  local gone = redis.call('ZRANGEBYSCORE', deadlines, '-inf', now, 'LIMIT', 0, 100)
  if #gone > 0 then
    redis.call('ZREM', queue, unpack(gone))
    redis.call('ZREM', deadlines, unpack(gone))
    redis.call('HDEL', ttls, unpack(gone))
  end
  return #gone
end

-- Whether anyone listens on a wake-up channel, asked before anything is told on it, so that a
-- message saying "handed to you" only ever goes to a waiter the script has made the holder:
-- 'yes' when a subscriber is on this server (PUBSUB NUMSUB, or SHARDNUMSUB); 'no' when there
-- is none here and a message published here reaches no one else; 'maybe' when there is none
-- here but a message would reach subscribers elsewhere: on a cluster without sharded pub/sub
-- (Redis 6.2) PUBLISH goes to every node while the counts see only this one, and a waiter's
-- subscription may sit on a node that no longer owns the slot (it moved). A publish's reply is
-- never read for this: it counts this node's listeners only, and by then the message is out.
-- (Listeners on replicas, which a master's PUBLISH or SPUBLISH also reaches, are never told
-- anything unless one listens here: a 'no' publishes nothing.)
local function listening(publish, channel)
  local sub = publish == 'SPUBLISH' and 'SHARDNUMSUB' or 'NUMSUB'
  if redis.call('PUBSUB', sub, channel)[2] > 0 then
    return 'yes'
  end
  return publish == 'CPUBLISH' and 'maybe' or 'no'
end

-- Tells the waiter whose token is TOKEN (place arrival ARRIVAL) on its wake-up channel WAKE,
-- with SPUBLISH on a cluster that has sharded pub/sub (the channel is in the lock's slot), else
-- PUBLISH ('PUBLISH'; 'CPUBLISH': a cluster without it, Redis 6.2, which carries the message to
-- every node): "COUNTER ARRIVAL TOKEN" when it was handed the lock or a lease (COUNTER > 0: the
-- fencing counter it was handed at), "0 ARRIVAL TOKEN" to wake it for an attempt of its own,
-- "? ARRIVAL TOKEN" to wake it where this server cannot see it listen (a 'maybe': its process
-- also learns that its subscription is on a node that does not own the slot; pubsub.rs).
local function tell(publish, wake, counter, arrival, token)
  local message = counter .. ' ' .. arrival .. ' ' .. token
  if publish == 'SPUBLISH' then
    redis.call('SPUBLISH', wake, message)
  else
    redis.call('PUBLISH', wake, message)
  end
end

-- Hands the lock to the first waiter in line that listens for it, as its own acquire would:
-- the lock key set to its token with its TTL, the fencing counter incremented, and then the
-- message "COUNTER ARRIVAL TOKEN" published (with PUBLISH: 'PUBLISH', 'CPUBLISH' on a cluster
-- without sharded pub/sub, or 'SPUBLISH' on a cluster, where the channel is in the lock's hash
-- slot) on its wake-up channel (CHANNEL, '|', the first WAKE_ID_LEN bytes of its token). A
-- waiter nobody listens for (listening(): its process is gone, the server closed its
-- connections; or it is not subscribed yet) is passed over, keeping its place, and told
-- nothing: the lock never goes to a dead waiter, and a live one not yet listening takes its
-- turn at its next attempt. A waiter that may listen elsewhere ('maybe') is woken ("? ARRIVAL
-- TOKEN") and the name stays free for it: nobody behind it passes it, and it takes the lock at
-- the attempt the message starts (or, if it is gone, once its place expires). A waiter for
-- several names at once (its TTL entry is 'm' and the TTL) is never handed one name alone,
-- which would have it hold one while it waits for another: it is woken ("0 ARRIVAL TOKEN")
-- and takes all its names in one attempt, while the name stays free for it. Stops at `self`
-- (an acquire's own token): returns 'self' there, true when handed to another waiter, 'woke'
-- when a waiter was woken instead, false when nobody in line listens.
local function hand_over(lock, fence_key, queue, ttls, publish, channel, wake_id_len, self)
  local line = redis.call('ZRANGE', queue, 0, 7, 'WITHSCORES')
  for i = 1, #line, 2 do
    local token, arrival = line[i], line[i + 1]
    if token == self then
      return 'self'
    end
    local ttl = redis.call('HGET', ttls, token)
    -- A permit waiter's entry ('p...') is never a lock's (permits.lua): passed over.
    if ttl and string.sub(ttl, 1, 1) ~= 'p' then
      local wake = channel .. '|' .. string.sub(token, 1, wake_id_len)
      local heard = listening(publish, wake)
      if heard == 'maybe' then
        tell(publish, wake, '?', arrival, token)
        return 'woke'
      elseif heard == 'yes' and string.sub(ttl, 1, 1) == 'm' then
        tell(publish, wake, '0', arrival, token)
        return 'woke'
      elseif heard == 'yes' then
        local fence = redis.call('INCR', fence_key)
        redis.call('SET', lock, token, 'PX', ttl)
        tell(publish, wake, fence, arrival, token)
        return true
      end
    end
  end
  return false
end

-- Takes (or keeps) TOKEN's place in a lock's queue (QUEUE, DEADLINES, TTLS): arrival ARRIVAL,
-- kept LASTS ms without a new attempt, TTL the waiter's entry for hand_over (a TTL in ms, or
-- 'm' and one for a waiter of several names). PTTL is the queue's PTTL read earlier in the
-- same call (nil: read here). Returns ZADD's count (1: a new place) and the queue's PTTL
-- after it.
-- The queue's upkeep runs about once per LASTS, not at every attempt: the three keys are kept
-- alive for twice LASTS and renewed once less than LASTS is left, and the places of waiters
-- that stopped trying are swept then. They always hold the same tokens and get the same
-- expiry in the same call, so the queue's PTTL stands for all three, and they outlive the
-- last place by at most twice LASTS. A place swept late never gets the lock: every path that
-- hands it over sweeps first (release_queued.lua, acquire_queued.lua, the scripts of several
-- names).
local function take_place(queue, deadlines, ttls, token, arrival, lasts, ttl, now, pttl)
  pttl = pttl or redis.call('PTTL', queue)
  local upkeep = pttl < lasts
  if upkeep then
    sweep(queue, deadlines, ttls, now)
  end
  local new = redis.call('ZADD', queue, 'NX', arrival, token)
  redis.call('ZADD', deadlines, now + lasts, token)
  redis.call('HSET', ttls, token, ttl)
  if upkeep then
    for _, key in ipairs({queue, deadlines, ttls}) do
      redis.call('PEXPIRE', key, 2 * lasts)
    end
    return new, 2 * lasts
  end
  return new, pttl
end
