-- Releases the unique locks of jobs a worker is starting. With ARGV[1] "keep" it only reads them
-- (UniqueUntilDone: the lock goes when the job ends).
--
-- keys: varies
-- uses: none
--
-- KEYS[1..n] unique locks
-- ARGV[1] (optional) "keep": read the locks without deleting them
--
-- Returns per lock what it held: "1", or the latest job payload of a ByKey job, or nil when the lock
-- had expired (or holds another type).

local out = {}
for i = 1, #KEYS do
  local v = redis.pcall('get', KEYS[i])
  if type(v) == 'table' then v = false end
  out[i] = v
  if ARGV[1] ~= 'keep' then redis.call('del', KEYS[i]) end
end
return out
