-- Release a permit lease. The whole script is this file, queue.lua, permits.lua, then
-- permits_release.lua (scripts/permits.rs): this first part is the path where nobody is in
-- line, which returns before the helpers are even defined (as release.lua does for a lock).
-- KEYS and ARGV: as permits_release.lua.
--
-- Nobody in line (the queue's key does not exist) and a holder's release or an attempt's undo
-- (modes 1 and 0; a holder that waited in line, mode 3, likely has someone behind it): the
-- token's lease, if it has not ended, gives its weight back; the last lease takes both keys
-- with it (the kind and the limit go: nobody holds or waits). Five commands for the last
-- holder, seven for another. A lease that ended, or a name that is not a semaphore's or a
-- read-write lock's, takes the full path (which gives back what ended, or names the kind).
local mode = string.match(ARGV[2], '^%S+ ([0-3])')
local queue_left = (mode == '1' or mode == '0') and redis.call('PTTL', KEYS[4]) or nil
if queue_left == -2 then
  local meta = redis.pcall('HMGET', KEYS[1], 'held', '=' .. ARGV[1])
  if meta.err == nil and meta[2] then
    local ends = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
    local t = redis.call('TIME')
    if ends and ends > tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then
      local held = (tonumber(meta[1]) or 0) - tonumber(meta[2])
      if held <= 0 then
        redis.call('DEL', KEYS[1], KEYS[2])
      else
        redis.call('HDEL', KEYS[1], '=' .. ARGV[1])
        redis.call('HSET', KEYS[1], 'held', held)
        redis.call('ZREM', KEYS[2], ARGV[1])
      end
      return 1
    end
  end
end
-- Someone is in line, the lease ended or is not here, or the name is not fencelock's permits:
-- permits_release.lua (which reads QUEUE_LEFT, the queue's PTTL in modes 0 and 1).
