-- The permit scripts' helpers (semaphore and read-write lock; kind.rs), after queue.lua and
-- before permits_acquire.lua, permits_release.lua (scripts.rs).
-- KEYS of every permit script, a prefix of: [1] the name's key, a hash: 'kind' ('semaphore'
-- or 'rwlock'), 'limit' (the capacity), 'held' (the weights held), and '=' .. token -> the
-- weight each holder holds; [2] the holders' leases, a sorted set: token -> server time in ms
-- at which the lease ends; [3] the fencing counter; [4] wait queue (token -> arrival);
-- [5] queue deadlines; [6] the waiters' entries (token -> 'p' .. WEIGHT .. ' ' .. TTL); on a
-- cluster, after the keys of the acquire, release and extend, the slot guard (keys.rs), never
-- read.
-- The name's key is the name itself, so a lock (a string) and a semaphore or read-write lock
-- (a hash) on one name exclude each other, and a classic SET NX fails on it.
-- Both keys outlive the last lease (by at most twice its TTL: upkeep), and the name's key the
-- queue too: while either lives, the kind and the limit stay.

-- The error that names the kind found: the Rust side (failure.rs) reads its first word.
local function wrong_kind(found, wanted)
  return redis.error_reply('FENCELOCK_WRONGKIND the name is held as ' .. found ..
    ', not as ' .. wanted)
end

local KINDS = {s = 'semaphore', r = 'rwlock', w = 'rwlock'}
local SHOWN = {semaphore = 'a semaphore', rwlock = 'a read-write lock'}

-- The name's state as a hash read once: {held, mine} (the weights held, and TOKEN's weight
-- when it holds a lease; TOKEN may be nil), `fresh` when the name has no state yet; or the
-- error reply when the name holds another kind, another limit, or something that is not
-- fencelock's. KIND is the call's letter ('s', 'r', 'w'), LIMIT its capacity; without them (a
-- release, an extension) any kind of permits will do.
local function read_meta(key, kind, limit, token)
  local wanted = kind and SHOWN[KINDS[kind]] or 'a semaphore or read-write lock'
  local meta = redis.pcall('HMGET', key, 'kind', 'limit', 'held', '=' .. (token or ''))
  if meta.err and string.sub(meta.err, 1, 9) ~= 'WRONGTYPE' then
    -- Not the key's type (a permission denied, ...): raised again, so that the error names
    -- the command by its line (failure.rs).
    redis.call('HMGET', key, 'kind')
  end
  if meta.err then
    local found = redis.call('TYPE', key).ok
    if found == 'string' then
      return nil, wrong_kind('a lock', wanted)
    end
    return nil, redis.error_reply('WRONGTYPE the name holds a Redis ' .. found ..
      ', which is not fencelock\'s')
  end
  local state = {kind = meta[1], held = tonumber(meta[3]) or 0,
    mine = token and tonumber(meta[4]), limit = tonumber(meta[2])}
  if meta[1] == false then
    if redis.call('EXISTS', key) == 1 then
      return nil, redis.error_reply('WRONGTYPE the name holds a Redis hash that is not fencelock\'s')
    end
    state.fresh = true
    return state
  end
  if kind ~= nil and meta[1] ~= KINDS[kind] then
    return nil, wrong_kind(SHOWN[meta[1]] or meta[1], wanted)
  end
  if kind ~= nil and meta[2] ~= limit then
    return nil, redis.error_reply('FENCELOCK_INVALID the semaphore has limit ' .. meta[2] ..
      ' on the servers while its permits are held or waited for; this call names limit ' .. limit)
  end
  return state
end

-- The tokens of every lease the name's key still counts (its '=' fields).
local function counted(key)
  local tokens = {}
  for _, field in ipairs(redis.call('HKEYS', key)) do
    if string.sub(field, 1, 1) == '=' then
      tokens[#tokens + 1] = string.sub(field, 2)
    end
  end
  return tokens
end

-- Gives back the weights of leases that ended by now (at most 1000 a call, about a
-- millisecond of the server's time: the rest at the next). Updates STATE's weights held, and
-- forgets STATE.mine when TOKEN's own lease was among them.
-- The leases' key outlives each lease (upkeep), but not always the name's key, which a queue
-- keeps alive: once it expired with weights still counted, every lease had ended, and all
-- their weights are given back (else they would be lost for as long as anyone waits).
-- Returns, when it gave nothing back, the end of the first lease (false when none is held),
-- else nil: the first lease read first tells both that none ended and that the leases' key
-- exists (a sorted set is never empty), one command where nothing ended, which is most calls.
local function reclaim(key, holders, state, now, token)
  local first = redis.call('ZRANGE', holders, 0, 0, 'WITHSCORES')[2]
  local ended
  if first and tonumber(first) <= now then
    ended = redis.call('ZRANGEBYSCORE', holders, '-inf', now, 'LIMIT', 0, 1000)
  elseif first == nil and state.held > 0 then
    ended = counted(key)
  end
  if ended == nil or #ended == 0 then
    return tonumber(first) or false
  end
  local fields = {}
  for i, t in ipairs(ended) do
    fields[i] = '=' .. t
    if t == token then
      state.mine = nil
    end
  end
  local weights = redis.call('HMGET', key, unpack(fields))
  for _, w in ipairs(weights) do
    state.held = state.held - (tonumber(w) or 0)
  end
  redis.call('HDEL', key, unpack(fields))
  redis.call('ZREM', holders, unpack(ended))
  redis.call('HSET', key, 'held', state.held)
  return nil
end

-- Keeps both keys alive past a lease of TTL ms that starts now: renewed to twice TTL once
-- less than TTL is left, so that most grants cost one PTTL here, and the keys outlive the
-- last lease by at most twice its TTL (the name's key is never shortened: it may be kept
-- alive longer for the queue).
local function upkeep(k, ttl)
  if redis.call('PTTL', k.holders) < ttl then
    redis.call('PEXPIRE', k.holders, 2 * ttl)
    if redis.call('PTTL', k.key) < 2 * ttl then
      redis.call('PEXPIRE', k.key, 2 * ttl)
    end
  end
end

-- Keeps the name's key (its kind and limit) alive as long as its queue (QUEUE_PTTL: the
-- queue's PTTL as this call left it, when known; nil: read here).
local function upkeep_queue(k, queue_pttl)
  queue_pttl = queue_pttl or redis.call('PTTL', k.queue)
  if queue_pttl > 0 and redis.call('PTTL', k.key) < queue_pttl then
    redis.call('PEXPIRE', k.key, queue_pttl)
  end
end

-- Makes TOKEN a holder of WEIGHT until NOW + TTL (HELD: the weights held with it), with a
-- new fencing counter (incremented first: a counter of the wrong type fails the script
-- before anything changed); its place in line, if it may have one (QUEUED), is given up.
-- Returns the counter.
local function grant(k, token, weight, ttl, now, held, kind, limit, queued)
  local fence = redis.call('INCR', k.fence)
  redis.call('HSET', k.key, 'kind', KINDS[kind], 'limit', limit, 'held', held,
    '=' .. token, weight)
  -- GT: a lease renewed by re-entry keeps the later of its two ends (a re-entrant acquisition
  -- with a shorter TTL never cuts the outer hold short; Redisson #1110).
  redis.call('ZADD', k.holders, 'GT', now + ttl, token)
  if queued and redis.call('ZREM', k.queue, token) == 1 then
    redis.call('ZREM', k.deadlines, token)
    redis.call('HDEL', k.ttls, token)
  end
  upkeep(k, ttl)
  return fence
end

-- Hands the freed weight to the waiters at the head of the line, in order, each as its own
-- acquire would (grant) and then told with "COUNTER ARRIVAL TOKEN" on its wake-up channel,
-- until one does not fit (first come, first served: nobody passes it) or SELF (an acquire's
-- own token) is reached. A waiter nobody listens for (listening() in queue.lua: its process
-- gone, or not subscribed yet) is passed over, keeping its place and told nothing, as
-- hand_over does for a lock; one that may listen on another node ('maybe') is woken ("?
-- ARRIVAL TOKEN") and the line stops there, the weight kept free for it. Returns 'self' when
-- SELF was reached, 'blocked' when a waiter did not fit or was woken, else 'end'; and the
-- weights held after.
local function hand_out(k, held, limit, now, self)
  local line = redis.call('ZRANGE', k.queue, 0, 99, 'WITHSCORES')
  for i = 1, #line, 2 do
    local token, arrival = line[i], line[i + 1]
    if token == self then
      return 'self', held
    end
    local weight, ttl = string.match(redis.call('HGET', k.ttls, token) or '', '^p(%d+) (%d+)$')
    if weight then
      weight = tonumber(weight)
      if held + weight > limit then
        return 'blocked', held
      end
      local wake = k.channel .. '|' .. string.sub(token, 1, k.wake_id_len)
      local heard = listening(k.publish, wake)
      if heard == 'maybe' then
        tell(k.publish, wake, '?', arrival, token)
        return 'blocked', held
      elseif heard == 'yes' then
        local fence = redis.call('INCR', k.fence)
        redis.call('HSET', k.key, 'held', held + weight, '=' .. token, weight)
        redis.call('ZADD', k.holders, now + tonumber(ttl), token)
        redis.call('ZREM', k.queue, token)
        redis.call('ZREM', k.deadlines, token)
        redis.call('HDEL', k.ttls, token)
        upkeep(k, tonumber(ttl))
        held = held + weight
        tell(k.publish, wake, fence, arrival, token)
      end
    end
  end
  return 'end', held
end

-- How long until the first lease ends (ms), -2 when none is held: what a refused caller
-- sleeps until at most. FIRST: that lease's end when known (reclaim's; `false`: none held),
-- nil: read here.
local function first_end(holders, now, first)
  if first == nil then
    first = tonumber(redis.call('ZRANGE', holders, 0, 0, 'WITHSCORES')[2]) or false
  end
  if first then
    return math.max(first - now, 0)
  end
  return -2
end
