-- Acquire one server's vote. The whole script is this file, queue.lua, then
-- acquire_queued.lua (scripts.rs): this first part is the uncontended path, which returns
-- before the queue's helpers are even defined.
-- KEYS (the order of keys.rs and scripts.rs): [1] lock key, [2] fencing counter, [3] wait
-- queue (token -> arrival), [4] queue deadlines (token -> server time in ms after which the
-- place is forgotten), [5] the waiters' TTLs (token -> ttl in ms, for the release that hands
-- the lock over); on a cluster [6] the slot guard (keys.rs), never read.
-- ARGV[1] token, ARGV[2] "PUBLISH TTL WAKE_ID_LEN ARRIVAL LASTS OWN CHANNEL" (packed by
-- scripts.rs; see acquire_queued.lua).
-- Returns {1, counter} when granted, else {0, PTTL, counter, SAME} (acquire_queued.lua).
--
-- Uncontended: nobody in line (the queue's key does not exist: PTTL -2, which costs the
-- server a fifth less than reading the queue's head; bench/notes.md), and the key free: the
-- classic SET NX PX, then the counter's INCR. Three commands. Nobody in line means no waiter
-- can be passed: a free key with someone queued goes to acquire_queued.lua, which hands it to
-- the first in line. A classic SET NX PX holder (another client) makes the SET fail, as it
-- makes theirs fail. A counter of the wrong type fails the INCR: the key just written is
-- deleted, so the error leaves nothing changed.
local queue_pttl = redis.call('PTTL', KEYS[3])
if queue_pttl == -2 then
  local ttl = string.match(ARGV[2], '^%S+ (%d+) ')
  if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ttl) then
    local fence = redis.pcall('INCR', KEYS[2])
    if type(fence) == 'table' then
      redis.call('DEL', KEYS[1])
      return fence
    end
    return {1, fence}
  end
end
-- Someone is in line, or the key is held: acquire_queued.lua decides (with the queue's
-- QUEUE_PTTL, which take_place needs).
