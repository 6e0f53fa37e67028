-- Read-only inspection of a lock: who holds it and for how long, and how many wait in line,
-- changing nothing.
-- KEYS (the order of keys.rs and scripts.rs): [1] lock key, [2] wait queue.
-- Returns {WAITERS} when the key is absent, else {holder's token, PTTL, WAITERS} (PTTL -1: no
-- expiry, a classic SET without PX). The token stays inside the library: it is only compared
-- across servers, never shown to the caller.
local holder, err = holder_of(KEYS[1])
if err then
  return err
end
local waiters = redis.call('ZCARD', KEYS[2])
if holder == false then
  return {waiters}
end
return {holder, redis.call('PTTL', KEYS[1]), waiters}
