-- Reads the records of the jobs a job waited for (EnqueueOptions.After, or the step before it in a
-- chain), in one call: the job's record lists them in its 'after' field.
--
-- keys: 1
-- uses: none
--
-- KEYS[1] the job's record (<ns>:job:<id>)
-- ARGV[1] namespace prefix
--
-- Returns, per dependency in the order given at enqueue, its ID and its record's fields and values
-- (HGETALL; empty when the record expired or cannot be read). Nothing for a job without
-- dependencies or without a record.

-- pc runs a command, nil when Redis refuses it (a key of another type).
local function pc(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then return nil end
  return r
end
local after = pc('hget', KEYS[1], 'after')
local out = {}
if not after then return out end
for id in string.gmatch(after, '[^,]+') do
  out[#out + 1] = id
  out[#out + 1] = pc('hgetall', ARGV[1] .. 'job:' .. id) or {}
end
return out
