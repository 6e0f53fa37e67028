-- Before the lock scripts' GET of a lock key (scripts.rs puts it in front of the scripts that
-- read one): the holder's token, false when free; or, when the name is not a lock, the error
-- reply to return: the kind found for fencelock's semaphore or read-write lock (its first word
-- read by failure.rs), else the WRONGTYPE error as it came.
local function holder_of(key)
  local holder = redis.pcall('GET', key)
  if type(holder) ~= 'table' then
    return holder
  end
  if string.sub(holder.err, 1, 9) ~= 'WRONGTYPE' then
    -- Not the key's type (a permission denied, ...): raised again, so that the error names
    -- the command by its line (failure.rs).
    redis.call('GET', key)
  end
  local kind = redis.pcall('HGET', key, 'kind')
  local shown = ({semaphore = 'a semaphore', rwlock = 'a read-write lock'})[kind]
  if shown then
    return nil, redis.error_reply('FENCELOCK_WRONGKIND the name is held as ' .. shown ..
      ', not as a lock')
  end
  return nil, holder
end
