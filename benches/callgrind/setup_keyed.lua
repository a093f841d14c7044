-- Fills the keyed state of job name "a" in namespace "cg": ARGV[1] keys, each with ARGV[2] jobs in
-- its queue, every key ready and in the waiting index, as producers leave them.
--
-- keys: 0; ARGV[1] keys, ARGV[2] jobs per key. Returns the number of keys.
local p = 'cg:keyed:a:'
redis.call('del', p .. 'ready', p .. 'waiting', p .. 'running', p .. 'meta', p .. 'pool:inprogress')
local keys, per = tonumber(ARGV[1]), tonumber(ARGV[2])
for k = 0, keys - 1 do
  local q = p .. '{' .. k .. '}'
  redis.call('del', q)
  for i = 1, per do
    redis.call('lpush', q, '{"name":"a","id":"' .. k .. '-' .. i .. '","t":1,"args":null,"key":"' .. k .. '"}')
  end
  redis.call('zadd', p .. 'ready', 0, k)
  redis.call('zadd', p .. 'waiting', per, k)
end
return keys
