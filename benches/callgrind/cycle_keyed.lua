-- The library's keyed fetch and acknowledgement, without the rest of the exchange script: appended
-- to internal/rdb/lua/lib/keychecks.lua, internal/rdb/lua/lib/keyed.lua and take_ack.lua, it takes
-- ARGV[3] times up to ARGV[2] jobs with keyedTake into an in-progress list, then acknowledges them
-- (takeAndAck: LREM of each entry and keyedReleaseMany of their keys).
--
-- keys: 0; ARGV[1] KeyConcurrency (0: none), ARGV[2] jobs per take, ARGV[3] takes.
-- Returns the jobs taken.
local k = keyedKeys('cg:keyed:a:')
local d = {limit = tonumber(ARGV[1]), rateJobs = 0, ratePeriod = 0, hold = false, pools = 'cg:worker_pools'}
local n, rounds = tonumber(ARGV[2]), tonumber(ARGV[3])
local total = 0
for _ = 1, rounds do total = total + takeAndAck(k, n, 'cg:keyed:a:pool:inprogress', d) end
return total
