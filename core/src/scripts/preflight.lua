-- Preflight, once per connection: every command the other scripts run, on scratch keys of the
-- manager's prefix, so that an ACL user lacking one fails the first call with the permission
-- error naming it, not the first contended acquire or the first release that hands over.
-- KEYS (the order of keys.rs and scripts.rs) of a reserved scratch name: [1] lock key, [2] the
-- fencing counter (only read), [3] wait queue, [4] queue deadlines, [5] the waiters' TTLs.
-- ARGV[1] a wake-up channel of the scratch name (nobody listens to it), ARGV[2] the command
-- that wakes a waiter ('PUBLISH', 'CPUBLISH' on a cluster without sharded pub/sub, or
-- 'SPUBLISH' on a cluster), and the count of a channel's listeners the hand-offs ask for first
-- (PUBSUB NUMSUB, or SHARDNUMSUB; queue.lua's listening()).
-- Returns 1, or 2 when asked for SPUBLISH on a server that lacks it (sharded pub/sub came in
-- Redis 7.0): the caller then wakes waiters with PUBLISH, which a cluster carries to every
-- node. Leaves nothing behind.
redis.call('TIME')
redis.call('GET', KEYS[2])
redis.call('SET', KEYS[1], '0', 'PX', 60000)
redis.call('GET', KEYS[1])
redis.call('INCR', KEYS[1])
redis.call('PTTL', KEYS[1])
redis.call('PEXPIRE', KEYS[1], 60000)
redis.call('ZADD', KEYS[3], 'NX', 0, 'preflight')
redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', 0, 'LIMIT', 0, 1)
redis.call('ZREM', KEYS[3], 'preflight')
redis.call('HSET', KEYS[5], 'preflight', 1)
redis.call('HGET', KEYS[5], 'preflight')
redis.call('HDEL', KEYS[5], 'preflight')
redis.call('DEL', KEYS[1], KEYS[3], KEYS[4], KEYS[5])
if ARGV[2] == 'SPUBLISH' then
  local sent = redis.pcall('SPUBLISH', ARGV[1], '')
  if type(sent) ~= 'table' or not sent.err then
    redis.call('PUBSUB', 'SHARDNUMSUB', ARGV[1])
    return 1
  end
  -- Redis 6.2: "Unknown Redis command called from Lua script" (7.0: "... from script").
  if not string.find(sent.err, 'Unknown Redis command', 1, true) then
    return sent
  end
  redis.call('PUBLISH', ARGV[1], '')
  redis.call('PUBSUB', 'NUMSUB', ARGV[1])
  return 2
end
redis.call('PUBLISH', ARGV[1], '')
redis.call('PUBSUB', 'NUMSUB', ARGV[1])
return 1
