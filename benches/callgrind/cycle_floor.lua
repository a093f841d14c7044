-- The least a dispatcher that keeps a queue per key can do: pop the keys with the earliest turns,
-- RPOP each key's share of the take (as keyedTake gives it), put the keys back with a later score, LPUSH the jobs into an in-progress
-- list and LREM each when done. No running counts, limits, backlog index or key beside the job.
--
-- keys: 0; ARGV[1] unused, ARGV[2] jobs per take, ARGV[3] takes. Returns the jobs taken.
local p = 'cg:keyed:a:'
local n, rounds = tonumber(ARGV[2]), tonumber(ARGV[3])
local total = 0
for _ = 1, rounds do
  local popped = redis.call('zpopmin', p .. 'ready', n)
  local out, readd = {}, {}
  -- Each key's share of the take, as keyedTake gives it.
  local quantum = math.max(1, math.floor(n / math.max(1, #popped / 2)))
  for i = 1, #popped, 2 do
    local K = popped[i]
    local vals = redis.call('rpop', p .. '{' .. K .. '}', quantum)
    if vals then
      for _, v in ipairs(vals) do out[#out + 1] = v end
      readd[#readd + 1] = popped[i + 1] + #vals
      readd[#readd + 1] = K
    end
  end
  if #readd > 0 then redis.call('zadd', p .. 'ready', unpack(readd)) end
  if #out > 0 then redis.call('lpush', p .. 'pool:inprogress', unpack(out)) end
  for _, e in ipairs(out) do redis.call('lrem', p .. 'pool:inprogress', '-1', e) end
  total = total + #out
end
return total
