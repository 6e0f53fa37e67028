-- Fencing write-back: raise the counter to at least ARGV[1].
-- KEYS[1] fencing counter key; ARGV[1] the attempt's fencing token.
-- Returns the counter's value afterwards.
local target = tonumber(ARGV[1])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current == nil then
  return redis.error_reply('fencing counter ' .. KEYS[1] .. ' does not hold an integer')
end
if current < target then
  redis.call('SET', KEYS[1], ARGV[1])
  return target
end
return current
