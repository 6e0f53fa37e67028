-- Compare-and-delete of several names held with one token, each handed to the first waiter
-- in its line as release.lua does (run after queue.lua).
-- KEYS: for each name, the five keys of release.lua in their order, name after name.
-- On a cluster the slot guard follows (keys.rs), never read.
-- ARGV[1] token; ARGV[1 + i] the release channel of name i; last "PUBLISH LEAVE WAKE_ID_LEN"
-- as in release.lua.
-- Returns 1 when every name was released, else -1 when another token holds one of them, else
-- 0 (a key was gone, or LEAVE '2': only the places were given up).
local publish, mode, wake_id_len = string.match(ARGV[#ARGV], '^(%S+) ([012]) (%d+)$')
wake_id_len = tonumber(wake_id_len)
local token = ARGV[1]
local n = math.floor(#KEYS / 5)
local function key(i, j)
  return KEYS[(i - 1) * 5 + j]
end
local result = 1
for i = 1, n do
  local queued = redis.call('ZRANGE', key(i, 3), 0, 0)[1] ~= nil
  if mode ~= '0' and queued and redis.call('ZREM', key(i, 3), token) == 1 then
    redis.call('ZREM', key(i, 4), token)
    redis.call('HDEL', key(i, 5), token)
  end
  local holder = false
  if mode ~= '2' then
    local err
    holder, err = holder_of(key(i, 1))
    if err then
      return err
    end
  end
  if holder == token then
    if queued then
      sweep(key(i, 3), key(i, 4), key(i, 5), now_ms())
    end
    if not queued or hand_over(key(i, 1), key(i, 2), key(i, 3), key(i, 5), publish, ARGV[1 + i],
        wake_id_len, nil) ~= true then
      redis.call('DEL', key(i, 1))
    end
  elseif holder == false then
    if result == 1 then
      result = 0
    end
  else
    result = -1
  end
end
return result
