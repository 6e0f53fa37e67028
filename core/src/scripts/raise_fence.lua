-- Fencing write-back: raise the counter to at least ARGV[1].
-- KEYS (the order of keys.rs and scripts.rs): [1] lock key (not touched: it names the lock
-- the counter serves), [2] fencing counter; ARGV[1] the attempt's fencing token.
-- Returns the counter's value afterwards.
local target = tonumber(ARGV[1])
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
if current == nil then
  return redis.error_reply('fencing counter ' .. KEYS[2] .. ' does not hold an integer')
end
if current < target then
  redis.call('SET', KEYS[2], ARGV[1])
  return target
end
return current
