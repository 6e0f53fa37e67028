-- Compare-and-PEXPIRE.
-- KEYS (the order of keys.rs and scripts.rs): [1] lock key; ARGV[1] token, ARGV[2] ttl in ms,
-- ARGV[3] '1' to add ARGV[2] to the key's remaining TTL (atomically, here) instead of setting
-- the TTL to it.
-- Returns 1 when extended (adding: the new TTL in ms, at least 1), 0 when the key was gone,
-- -1 when another token holds it.
local holder, err = holder_of(KEYS[1])
if err then
  return err
end
if holder == ARGV[1] then
  if ARGV[3] == '1' then
    local left = redis.call('PTTL', KEYS[1])
    if left < 0 then
      left = 0
    end
    local ttl = left + tonumber(ARGV[2])
    redis.call('PEXPIRE', KEYS[1], ttl)
    return ttl
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder == false then
  return 0
end
return -1
