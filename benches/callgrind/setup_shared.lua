-- Fills one sorted set with the jobs of job name "a" in namespace "cg", as a dispatch that keeps the
-- jobs of keys without limits in one set (cycle_shared.lua) would leave them: ARGV[1] keys, each
-- with ARGV[2] jobs, job i of a key scored i - 1 (its virtual start time when every key starts at
-- 0 with weight 1), each member "<key>\n<payload>".
--
-- keys: 0; ARGV[1] keys, ARGV[2] jobs per key. Returns the number of jobs.
local p = 'cg:keyed:a:'
redis.call('del', p .. 'shared', p .. 'running', p .. 'meta', p .. 'pool:inprogress')
local keys, per = tonumber(ARGV[1]), tonumber(ARGV[2])
local batch, nb = {}, 0
for k = 0, keys - 1 do
  for i = 1, per do
    batch[nb + 1] = tostring(i - 1)
    batch[nb + 2] = k .. '\n{"name":"a","id":"' .. k .. '-' .. i .. '","t":1,"args":null,"key":"' .. k .. '"}'
    nb = nb + 2
    if nb >= 2000 then
      redis.call('zadd', p .. 'shared', unpack(batch, 1, nb))
      nb = 0
    end
  end
end
if nb > 0 then redis.call('zadd', p .. 'shared', unpack(batch, 1, nb)) end
return keys * per
