-- The fenced store's write (tests/chaos/src/store.rs, and every worker's `hold` mode).
-- KEYS[1] largest token accepted, KEYS[2] data; ARGV[1] token (decimal), ARGV[2] value.
local seen = redis.call('GET', KEYS[1])
local t = ARGV[1]
if seen and (#t < #seen or (#t == #seen and t < seen)) then
  return 0
end
redis.call('SET', KEYS[1], t)
redis.call('SET', KEYS[2], ARGV[2])
return 1
