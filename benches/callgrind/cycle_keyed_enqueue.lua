-- The library's keyed enqueue, fetch and acknowledgement of the same jobs: appended to
-- internal/rdb/lua/lib/keychecks.lua, internal/rdb/lua/lib/keyed.lua and take_ack.lua, each of
-- ARGV[3] rounds queues ARGV[2] jobs as one enqueue_keyed.lua call does (keyedCheckMany, then
-- keyedPushMany), then takes and acknowledges as many as cycle_keyed.lua does (takeAndAck).
--
-- keys: 0; ARGV[1] "fresh" (a key of its own for each job) or "10" (keys 0..9 in turn), ARGV[2]
-- jobs per round, ARGV[3] rounds, ARGV[4] "fill" to enqueue only (the jobs to take later, in the
-- layout the library's own enqueue makes). Returns the jobs taken, or enqueued with "fill".
local k = keyedKeys('cg:keyed:a:')
local d = {limit = 0, rateJobs = 0, ratePeriod = 0, hold = false, pools = 'cg:worker_pools'}
local fresh, n, rounds, fill = ARGV[1] == 'fresh', tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == 'fill'
local total = 0
local seq = tonumber(redis.call('get', 'cg:seq') or '0')
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
  local bad, plan = keyedCheckMany(k, checks)
  if bad then return redis.error_reply('the check refused the jobs') end
  keyedPushMany(k, 'a', groups, payloads, 'cg:wake', plan)
  if fill then
    total = total + n
  else
    total = total + takeAndAck(k, n, 'cg:keyed:a:pool:inprogress', d)
  end
end
redis.call('set', 'cg:seq', seq)
return total
