-- An unkeyed fetch and acknowledgement as the exchange script does them: RPOP of up to ARGV[2] jobs
-- with a count, LPUSH into the in-progress list, LREM of each when done.
--
-- keys: 0; ARGV[1] unused, ARGV[2] jobs per take, ARGV[3] takes. Returns the jobs taken.
local n, rounds = tonumber(ARGV[2]), tonumber(ARGV[3])
local total = 0
for _ = 1, rounds do
  local vals = redis.call('rpop', 'cg:jobs:a', n)
  if not vals then break end
  redis.call('lpush', 'cg:jobs:a:pool:inprogress', unpack(vals))
  for _, e in ipairs(vals) do redis.call('lrem', 'cg:jobs:a:pool:inprogress', '-1', e) end
  total = total + #vals
end
return total
