-- Lists members of sorted sets whose score is at or before the server's clock, and when the next one
-- after those is due.
--
-- keys: varies
-- uses: none
--
-- KEYS[1..n] sorted sets (scheduled, retry)
-- ARGV[1] at most this many members of each set
--
-- Returns {now, {members of KEYS[1]}, {members of KEYS[2]}, ..., milliseconds until the earliest
-- member not yet due is due, rounded up (-1: none; at most an hour)}.

local t = redis.call('time')
local now, nowMs = t[1], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {tonumber(now)}
local nextIn = -1
for i = 1, #KEYS do
  local m = redis.pcall('zrangebyscore', KEYS[i], '-inf', now, 'LIMIT', 0, ARGV[1])
  if m.err then m = {} end
  out[i + 1] = m
  local n = redis.pcall('zrangebyscore', KEYS[i], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local at = type(n) == 'table' and tonumber(n[2])
  if at then
    local d = math.ceil(at * 1000 - nowMs)
    if d ~= d or d < 1 then d = 1 elseif d > 3600000 then d = 3600000 end
    if nextIn < 0 or d < nextIn then nextIn = d end
  end
end
out[#KEYS + 2] = nextIn
return out
