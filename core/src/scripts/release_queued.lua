-- Release when someone is in line (after release.lua and queue.lua): leave the queue,
-- compare-and-delete, and hand the lock to the first waiter in line.
-- KEYS: as release.lua.
-- ARGV[1] token; ARGV[2] "PUBLISH LEAVE WAKE_ID_LEN CHANNEL" (packed by scripts.rs): PUBLISH
-- the command that wakes a waiter ('PUBLISH', or 'SPUBLISH' on a cluster), LEAVE '1' to give
-- up this token's place in the queue too (a holder's release, a waiter that stops waiting;
-- '3' the same, from a holder that waited in line: see release.lua),
-- '0' to keep it (a failed attempt's undo), '2' to give up the place only, leaving the key
-- alone (a waiter whose caller token holds the key there for another acquisition),
-- WAKE_ID_LEN how many leading bytes of a token name its waiter's wake-up channel (token.rs),
-- CHANNEL the release channel.
-- Returns 1 when released, 0 when the key was gone (or left alone), -1 when another token
-- holds it; in mode 2, 2 when the token had a place in line and holds the key, else 0.
-- The lock goes straight to the first waiter in line that listens (hand_over in queue.lua):
-- the key is set to its token with its TTL and the fencing counter incremented, as its own
-- acquire would, and it is told on its wake-up channel with the message "COUNTER ARRIVAL
-- TOKEN" (parsed by queue.rs): the fencing counter, its place's arrival (which names the
-- acquire call the place belongs to) and its token. Its TTL started after its place was
-- taken, which its own clock can bound. The others keep their places and sleep. When nobody
-- in line listens, or the first who does waits for several names (it is woken, and takes them
-- all in one attempt), the key is deleted.
local publish, mode, wake_id_len, channel = string.match(ARGV[2], '^(%S+) ([0-3]) (%d+) (.*)$')
local leave = mode ~= '0'
wake_id_len = tonumber(wake_id_len)
-- The queue's three keys hold the same tokens: a token not in the queue has nothing to remove
-- from the other two (a holder that got the key without waiting).
local placed = leave and redis.call('ZREM', KEYS[3], ARGV[1]) == 1
if placed then
  redis.call('ZREM', KEYS[4], ARGV[1])
  redis.call('HDEL', KEYS[5], ARGV[1])
end
-- Mode 2: a place in line while the key holds the token may have been handed the lock (a
-- handed place stays in line until its holder releases): 2 says so, and undo.rs asks the
-- waiter's wake-up messages whether it was.
if mode == '2' then
  if placed and redis.pcall('GET', KEYS[1]) == ARGV[1] then
    return 2
  end
  return 0
end
local holder, err = holder_of(KEYS[1])
if err then
  return err
end
if holder == ARGV[1] then
  sweep(KEYS[3], KEYS[4], KEYS[5], now_ms())
  if hand_over(KEYS[1], KEYS[2], KEYS[3], KEYS[5], publish, channel, wake_id_len, nil) ~= true then
    redis.call('DEL', KEYS[1])
  end
  return 1
end
if holder == false then
  return 0
end
return -1
