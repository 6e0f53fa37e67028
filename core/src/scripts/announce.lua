-- An election's change that no note announces (election/mod.rs): its leader resigned. Its
-- observers, who listen on the lock's release channel (waiters listen on channels of their
-- own, that name plus '|' and a wake id), read the election again.
-- KEYS: [1] lock key (it routes the call to the name's slot on a cluster).
-- ARGV[1] "PUBLISH CHANNEL" ('SPUBLISH' on a cluster with sharded pub/sub, 'CPUBLISH' on one
-- without: PUBLISH, which the cluster carries to every node).
-- Returns 1.
local publish, channel = string.match(ARGV[1], '^(%S+) (.*)$')
redis.call(publish == 'SPUBLISH' and 'SPUBLISH' or 'PUBLISH', channel, '')
return 1
