-- Several calls of one process in one script call (scripts/batch.rs, batch.rs). Each carried
-- script's code is below, unchanged, as a function of its own KEYS and ARGV.
-- ARGV: for each call in turn, OP (the script's number below), its key count, its argument
-- count, then its arguments; KEYS: each call's keys in turn.
-- Returns one reply per call, in their order: {1, reply}, or {0, error} for a call that
-- failed (what it wrote before failing is kept, as it would be for a script of its own).
local calls = {}
-- @CALLS@
local out = {}
local k, a = 0, 1
while a <= #ARGV do
  local op, nk, na = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local keys, argv = {}, {}
  for i = 1, nk do
    keys[i] = KEYS[k + i]
  end
  for i = 1, na do
    argv[i] = ARGV[a + 2 + i]
  end
  k = k + nk
  a = a + 3 + na
  local ok, reply = pcall(calls[op], keys, argv)
  if not ok then
    out[#out + 1] = {0, type(reply) == 'table' and reply.err or tostring(reply)}
  elseif type(reply) == 'table' and reply.err then
    out[#out + 1] = {0, reply.err}
  else
    out[#out + 1] = {1, reply}
  end
end
return out
