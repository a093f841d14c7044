-- The library's keyed fetch and acknowledgement, without the rest of the exchange script: appended
-- to internal/rdb/lua/lib/keychecks.lua and internal/rdb/lua/lib/keyed.lua, it takes ARGV[3] times up to ARGV[2] jobs with
-- keyedTake into an in-progress list, then acknowledges them: LREM of each entry and
-- keyedReleaseMany of their keys.
--
-- keys: 0; ARGV[1] KeyConcurrency (0: none), ARGV[2] jobs per take, ARGV[3] takes.
-- Returns the jobs taken.
local k = keyedKeys('cg:keyed:a:')
local d = {limit = tonumber(ARGV[1]), rateJobs = 0, ratePeriod = 0, hold = false, pools = 'cg:worker_pools'}
local n, rounds = tonumber(ARGV[2]), tonumber(ARGV[3])
local inprogress = 'cg:keyed:a:pool:inprogress'
local function nowMs() return 0 end
local total = 0
for _ = 1, rounds do
  local out = {}
  total = total + (keyedTake(k, n, inprogress, d, nowMs, out) or 0)
  local byKey = {}
  for _, e in ipairs(out) do
    redis.call('lrem', inprogress, '-1', e)
    local K = string.sub(e, 1, string.find(e, '\n', 1, true) - 1)
    byKey[K] = (byKey[K] or 0) + 1
  end
  keyedReleaseMany(k, byKey, d, 'a', 'cg:wake')
end
return total
