-- Compare-and-delete.
-- KEYS[1] lock key; ARGV[1] token, ARGV[2] release channel.
-- Returns 1 when deleted (and publishes on the channel), 0 when the key was gone,
-- -1 when another token holds it.
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], '')
  return 1
end
if holder == false then
  return 0
end
return -1
