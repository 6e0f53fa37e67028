-- Compare-and-delete, and hand the lock to the first waiter in line. The whole script is this
-- file, queue.lua, then release_queued.lua (scripts.rs): this first part is the path where
-- nobody is in line, which returns before the queue's helpers are even defined.
-- KEYS (the order of keys.rs and scripts.rs): [1] lock key, [2] fencing counter, [3] wait
-- queue, [4] queue deadlines, [5] the waiters' TTLs; on a cluster [6] the slot guard (keys.rs),
-- never read.
-- ARGV[1] token; ARGV[2] "PUBLISH LEAVE WAKE_ID_LEN CHANNEL" (packed by scripts.rs; see
-- release_queued.lua).
-- Returns 1 when released, 0 when the key was gone (or left alone), -1 when another token
-- holds it; in mode 2, 2 when the token had a place in line and holds the key, else 0.
--
-- Nobody in line (the queue's key does not exist: PTTL -2): the classic compare-and-delete
-- (mode 2, leave the queue only, has nothing to do). Three commands. Mode 3 (a holder that
-- got the lock after waiting in line, so someone likely still is) skips the check and goes
-- straight to release_queued.lua, which handles an empty queue too.
local mode = string.match(ARGV[2], '^%S+ (%d)')
if mode ~= '3' and redis.call('PTTL', KEYS[3]) == -2 then
  if mode == '2' then
    return 0
  end
  local holder = redis.pcall('GET', KEYS[1])
  if type(holder) ~= 'table' then
    if holder == ARGV[1] then
      redis.call('DEL', KEYS[1])
      return 1
    end
    return holder == false and 0 or -1
  end
end
-- Someone is in line, or the key is not a lock (release_queued.lua names what it is):
-- release_queued.lua.
