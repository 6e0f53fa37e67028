-- Read-only inspection of a lock: who holds it and for how long, and how many wait in line,
-- changing nothing.
-- KEYS (the order of keys.rs and scripts.rs): [1] lock key, [2] wait queue, [3] the holder
-- label's note (note.lua).
-- Returns {WAITERS} when the key is absent, else {holder's token, PTTL, WAITERS, NOTE} (WAITERS
-- -1: not counted, see below; PTTL -1: no expiry, a classic SET without PX; NOTE the holder's
-- note when it left one under this token, else false). The token stays inside the library:
-- it is only compared across servers, never shown to the caller.
local holder, err = holder_of(KEYS[1])
if err then
  return err
end
-- The queue's size needs +zcard, which the minimal ACL of locks does not give: -1 then
-- (unknown), so that a lock's inspection keeps working under that rule (docs/SECURITY.md).
local waiters = redis.pcall('ZCARD', KEYS[2])
if type(waiters) ~= 'number' then
  waiters = -1
end
if holder == false then
  return {waiters}
end
-- The note is the holder's only when it starts with the holder's token and a newline.
local note = redis.call('GET', KEYS[3])
if note and string.sub(note, 1, #holder + 1) ~= holder .. '\n' then
  note = false
end
return {holder, redis.call('PTTL', KEYS[1]), waiters, note}
