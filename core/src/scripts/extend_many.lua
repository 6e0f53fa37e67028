-- Compare-and-PEXPIRE of several names held with one token, all or none.
-- KEYS: the lock keys of the names; ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] '1' to add
-- ARGV[2] to each key's remaining TTL instead of setting it.
-- Returns 1 when every key was extended (adding: the shortest new TTL in ms, at least 1);
-- else nothing is changed and it returns -1 when another token holds one of them, 0 when one
-- was gone.
local token = ARGV[1]
local result = 1
for i = 1, #KEYS do
  local holder, err = holder_of(KEYS[i])
  if err then
    return err
  end
  if holder == false then
    if result == 1 then
      result = 0
    end
  elseif holder ~= token then
    result = -1
  end
end
if result ~= 1 then
  return result
end
local shortest = nil
for i = 1, #KEYS do
  if ARGV[3] == '1' then
    local left = redis.call('PTTL', KEYS[i])
    if left < 0 then
      left = 0
    end
    local ttl = left + tonumber(ARGV[2])
    redis.call('PEXPIRE', KEYS[i], ttl)
    if shortest == nil or ttl < shortest then
      shortest = ttl
    end
  else
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
  end
end
return shortest or 1
