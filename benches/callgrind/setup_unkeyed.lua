-- Fills the queue of job name "a" in namespace "cg" with ARGV[1] jobs.
--
-- keys: 0; ARGV[1] jobs. Returns 1.
redis.call('del', 'cg:jobs:a', 'cg:jobs:a:pool:inprogress')
for i = 1, tonumber(ARGV[1]) do
  redis.call('lpush', 'cg:jobs:a', '{"name":"a","id":"' .. i .. '","t":1,"args":null}')
end
return 1
