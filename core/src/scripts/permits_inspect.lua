-- Read-only inspection of a semaphore or read-write lock, changing nothing (after
-- permits.lua; scripts.rs).
-- KEYS: as permits.lua, the first four (the name's key, the holders' leases, the fencing
-- counter, unused, and the wait queue).
-- ARGV[1] a token whose lease to look up, or ''.
-- Returns {} when the name is free, else {KIND, LIMIT, HELD, HOLDERS, WAITERS, MINE}: the
-- weights and holders of leases that have not ended, the places in line, and how long the
-- token's lease lasts in ms (-2: it holds none). A lock on the name is the error reply that
-- names it.
local state, err = read_meta(KEYS[1], nil, nil, ARGV[1] ~= '' and ARGV[1] or nil)
if err then
  return err
end
if state.fresh then
  return {}
end
local kind, held = state.kind, state.held
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Every lease that ended and is not given back yet (read-only: nothing is given back here).
local ended = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, token in ipairs(ended) do
  held = held - (tonumber(redis.call('HGET', KEYS[1], '=' .. token)) or 0)
end
local holders = redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')
if holders == 0 then
  -- Weights still counted for leases whose key expired (permits.lua's reclaim).
  held = 0
end
local mine = -2
if state.mine then
  local ends = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
  if ends and ends > now then
    mine = ends - now
  end
end
return {kind, state.limit or 0, held, holders, redis.call('ZCARD', KEYS[4]), mine}
