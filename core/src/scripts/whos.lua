-- Read-only: the notes of a semaphore's or read-write lock's leases that still run
-- (note_permits.lua), changing nothing.
-- KEYS: [1] the leases (holders), [2] the notes (whos).
-- Returns {token, note, ms left, token, note, ms left, ...}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local notes = redis.call('HGETALL', KEYS[2])
local out = {}
for i = 1, #notes, 2 do
  local ends = redis.call('ZSCORE', KEYS[1], notes[i])
  if ends and tonumber(ends) > now then
    out[#out + 1] = notes[i]
    out[#out + 1] = notes[i + 1]
    out[#out + 1] = tonumber(ends) - now
  end
end
return out
