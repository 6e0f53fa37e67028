-- Extend a permit lease (after permits.lua; scripts.rs).
-- KEYS: as permits.lua, the first two (the name's key, the holders' leases).
-- ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] '1' to add ARGV[2] to the lease's remaining time
-- instead of setting it to it.
-- Returns 1 when extended (adding: the new remaining time in ms, at least 1), 0 when the
-- lease was gone (ended, or never granted here).
local state, err = read_meta(KEYS[1], nil, nil, ARGV[1])
if err then
  return err
end
local now = now_ms()
-- Held: a lease that has not ended, and its weight among the name's (the name's key deleted
-- by hand takes every lease with it).
local ends = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
if ends == nil or ends <= now or not state.mine then
  return 0
end
local ttl = tonumber(ARGV[2])
if ARGV[3] == '1' then
  ttl = ends - now + ttl
end
redis.call('ZADD', KEYS[2], 'XX', now + ttl, ARGV[1])
upkeep({key = KEYS[1], holders = KEYS[2]}, ttl)
if ARGV[3] == '1' then
  return math.max(ttl, 1)
end
return 1
