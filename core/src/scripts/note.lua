-- The holder label's note (who.rs): written next to a lock by the holder that wants to be
-- found, changing nothing of the lock itself. Only while the lock key still holds the caller's
-- token, and for as long as the lock key lives (its PTTL), so that a note never outlives the
-- hold it describes for long; a later holder's inspection ignores a note of another token.
-- An election's term (election/mod.rs) notes its value this way, and announces it: ARGV[3]
-- is then "PUBLISH CHANNEL" ('SPUBLISH' on a cluster with sharded pub/sub), and the note is
-- followed by a message on the lock's release channel, which its observers listen to: empty
-- for a change (a new term, a proclaimed value), on which they read the election again, or,
-- for a renewal (the term extended, its value the same), "TERM PTTL OBSERVERS" (ARGV[3] the
-- term, ARGV[4] the observers' token, ARGV[5] the publish), which tells them the term's new
-- end on this server without a read: the release message's format, whose arrival field is
-- the key's PTTL here. The publish is always the last argument (scripts.rs respells it for a
-- cluster).
-- KEYS: [1] lock key, [2] the note's key (keys.rs `who`).
-- ARGV[1] token, ARGV[2] the note ("token\nsince_ms\nfencing_token\nlabel", who.rs).
-- Returns 1 when written, 0 when the lock is not held with the token (or has no expiry).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl <= 0 then
  return 0
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', pttl)
if ARGV[3] then
  local publish, channel = string.match(ARGV[#ARGV], '^(%S+) (.*)$')
  local message = ''
  if ARGV[5] then
    message = ARGV[3] .. ' ' .. pttl .. ' ' .. ARGV[4]
  end
  redis.call(publish == 'SPUBLISH' and 'SPUBLISH' or 'PUBLISH', channel, message)
end
return 1
