-- Compare-and-PEXPIRE.
-- KEYS (the order of keys.rs and scripts.rs): [1] lock key; ARGV[1] token, ARGV[2] new ttl
-- in ms.
-- Returns 1 when extended, 0 when the key was gone, -1 when another token holds it.
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder == false then
  return 0
end
return -1
