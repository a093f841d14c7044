-- Fills one sorted set with the jobs of job name "a" in namespace "cg", as a dispatch that keeps the
-- jobs of keys without limits in one set (cycle_shared.lua) would leave them: ARGV[1] keys, each
-- with ARGV[2] jobs, job i of a key scored i - 1 (its virtual start time when every key starts at
-- 0 with weight 1), each member "<key>\n<payload>". With ARGV[3] "head", only each key's first job
-- is in the set and the others wait in the key's list (<prefix>{<key>}, the next at the tail): a
-- limit of one job a key kept without a count (cycle_shared.lua, mode 3). "headbook" does the same and
-- also writes what mode 4 keeps: each key's lane field (the score of its job in the set) and its
-- entry in the waiting index (its jobs in its list). "waiting" keeps every job in the set and writes
-- each key's entry in the waiting index (its jobs), for cycle_shared.lua mode 6.
--
-- keys: 0; ARGV[1] keys, ARGV[2] jobs per key, ARGV[3] "head", "headbook", "waiting" or "". Returns
-- the number of jobs.
local p = 'cg:keyed:a:'
redis.call('del', p .. 'shared', p .. 'running', p .. 'meta', p .. 'pool:inprogress', p .. 'lane', p .. 'waiting')
local book = ARGV[3] == 'headbook'
local keys, per, head = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == 'head' or book

local batch, nb = {}, 0
for k = 0, keys - 1 do
  redis.call('del', p .. '{' .. k .. '}')
  for i = 1, per do
    local job = k .. '\n{"name":"a","id":"' .. k .. '-' .. i .. '","t":1,"args":null,"key":"' .. k .. '"}'
    if ARGV[3] == 'waiting' and i == 1 then redis.call('zadd', p .. 'waiting', per, k) end
    if book and i == 1 then
      redis.call('hset', p .. 'lane', k, '0')
      if per > 1 then redis.call('zadd', p .. 'waiting', per - 1, k) end
    end
    if head and i > 1 then
      redis.call('lpush', p .. '{' .. k .. '}', job)
    else
      batch[nb + 1] = tostring(i - 1)
      batch[nb + 2] = job
      nb = nb + 2
    end
    if nb >= 2000 then
      redis.call('zadd', p .. 'shared', unpack(batch, 1, nb))
      nb = 0
    end
  end
end
if nb > 0 then redis.call('zadd', p .. 'shared', unpack(batch, 1, nb)) end
return keys * per
