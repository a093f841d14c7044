-- The library's keyed enqueue, fetch and acknowledgement of the same jobs: appended to
-- internal/rdb/lua/lib/keychecks.lua and internal/rdb/lua/lib/keyed.lua, each of ARGV[3] rounds
-- queues ARGV[2] jobs as one enqueue_keyed.lua call does (keyedCheckMany, then keyedPushMany), then
-- takes as many with keyedTake into an in-progress list and acknowledges them (LREM of each entry,
-- keyedReleaseMany of their keys), as cycle_keyed.lua does.
--
-- keys: 0; ARGV[1] "fresh" (a key of its own for each job) or "10" (keys 0..9 in turn), ARGV[2]
-- jobs per round, ARGV[3] rounds. Returns the jobs taken.
local k = keyedKeys('cg:keyed:a:')
local d = {limit = 0, rateJobs = 0, ratePeriod = 0, hold = false, pools = 'cg:worker_pools'}
local fresh, n, rounds = ARGV[1] == 'fresh', tonumber(ARGV[2]), tonumber(ARGV[3])
local inprogress = 'cg:keyed:a:pool:inprogress'
local function nowMs() return 0 end
local total, seq = 0, 0
for _ = 1, rounds do
  -- The round's jobs, grouped by key as the client groups them: groups {key, from, to}.
  local byKey, order = {}, {}
  for _ = 1, n do
    seq = seq + 1
    local K = fresh and tostring(1000000 + seq) or tostring(seq % 10)
    if not byKey[K] then
      byKey[K] = {}
      order[#order + 1] = K
    end
    local jobs = byKey[K]
    jobs[#jobs + 1] = '{"name":"a","id":"' .. seq .. '","t":1,"args":null,"key":"' .. K .. '"}'
  end
  local payloads, groups, checks = {}, {}, {}
  for _, K in ipairs(order) do
    local from = #payloads + 1
    for _, p in ipairs(byKey[K]) do payloads[#payloads + 1] = p end
    groups[#groups + 1] = {K, from, #payloads}
    checks[#checks + 1] = {K, #payloads - from + 1}
  end
  if keyedCheckMany(k, checks) then return redis.error_reply('the check refused the jobs') end
  keyedPushMany(k, 'a', groups, payloads, 'cg:wake')
  local out = {}
  total = total + (keyedTake(k, n, inprogress, d, nowMs, out) or 0)
  local ended = {}
  for _, e in ipairs(out) do
    redis.call('lrem', inprogress, '-1', e)
    local K = string.sub(e, 1, string.find(e, '\n', 1, true) - 1)
    ended[K] = (ended[K] or 0) + 1
  end
  keyedReleaseMany(k, ended, d, 'a', 'cg:wake')
end
return total
