-- Compare-and-delete, and wake the first waiter in line (after queue.lua).
-- KEYS[1] lock key, KEYS[2] wait queue, KEYS[3] queue deadlines; ARGV[1] token, ARGV[2]
-- release channel, ARGV[3] '1' to give up this token's place in the queue too (a holder's
-- release, a waiter that stops waiting) or '0' to keep it (a failed attempt's undo),
-- ARGV[4] the first waiter's turn in ms.
-- Returns 1 when deleted, 0 when the key was gone, -1 when another token holds it.
-- On deletion, the first waiter still in line is woken on its channel (ARGV[2], '|', the first
-- 16 bytes of its token: token.rs WAKE_ID_LEN; its token is the message) and the free lock is
-- kept for it for ARGV[4] ms (the member '' of the deadlines):
-- only it tries at once, the others keep their places and sleep. A first waiter that does not
-- come in its turn only delays the others, by the turn.
if ARGV[3] == '1' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
end
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('DEL', KEYS[1])
  -- Nobody waiting (the uncontended path): nothing more to do.
  if redis.call('ZRANGE', KEYS[2], 0, 0)[1] == nil then
    return 1
  end
  local now = now_ms()
  sweep(KEYS[2], KEYS[3], now)
  local first = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if first ~= nil then
    local turn = tonumber(ARGV[4]) or 0
    redis.call('ZADD', KEYS[3], now + turn, '')
    if redis.call('PTTL', KEYS[3]) < turn then
      redis.call('PEXPIRE', KEYS[3], turn)
    end
    redis.call('PUBLISH', ARGV[2] .. '|' .. string.sub(first, 1, 16), first)
  end
  return 1
end
if holder == false then
  return 0
end
return -1
