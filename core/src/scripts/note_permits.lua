-- The holder label's note of a semaphore's or read-write lock's lease (who.rs): written next to
-- the leases by a holder that wants to be found, changing nothing of the leases themselves.
-- KEYS: [1] the leases (holders: token -> server time in ms when each ends), [2] the notes (a
-- hash: token -> note, keys.rs `whos`).
-- ARGV[1] token, ARGV[2] the note ("token\nsince_ms\nfencing_token\nlabel", who.rs).
-- Only while the token's lease runs; the hash lives as long as its longest lease, and loses
-- the notes of leases that ended (at most 100 a call). Returns 1 when written, else 0.
local ends = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not ends then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local left = tonumber(ends) - now
if left <= 0 then
  return 0
end
local fields = redis.call('HKEYS', KEYS[2])
for i = 1, math.min(#fields, 100) do
  local e = redis.call('ZSCORE', KEYS[1], fields[i])
  if not e or tonumber(e) <= now then
    redis.call('HDEL', KEYS[2], fields[i])
  end
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
if redis.call('PTTL', KEYS[2]) < left then
  redis.call('PEXPIRE', KEYS[2], left)
end
return 1
