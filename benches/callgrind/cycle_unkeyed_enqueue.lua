-- An unkeyed enqueue, fetch and acknowledgement of the same jobs: each of ARGV[3] rounds pushes
-- ARGV[2] jobs as enqueue_batch.lua does (LPUSH, a wake-up message), then takes and acknowledges them
-- as cycle_unkeyed.lua does.
--
-- keys: 0; ARGV[1] unused, ARGV[2] jobs per round, ARGV[3] rounds. Returns the jobs taken.
local n, rounds = tonumber(ARGV[2]), tonumber(ARGV[3])
local q, inprogress = 'cg:jobs:a', 'cg:jobs:a:pool:inprogress'
local total, seq = 0, 0
for _ = 1, rounds do
  local jobs = {}
  for i = 1, n do
    seq = seq + 1
    jobs[i] = '{"name":"a","id":"' .. seq .. '","t":1,"args":null}'
  end
  redis.call('sadd', 'cg:known_jobs', 'a')
  redis.call('lpush', q, unpack(jobs))
  redis.call('publish', 'cg:wake', 'a')
  local vals = redis.call('rpop', q, n)
  redis.call('lpush', inprogress, unpack(vals))
  for _, e in ipairs(vals) do redis.call('lrem', inprogress, '-1', e) end
  total = total + #vals
end
return total
