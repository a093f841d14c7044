-- schedules: the record of a schedule (schedules.go; docs/redis-layout.md, "Schedules"), a JSON array
-- whose head the scripts read and write and whose rest, the definition, they only compare:
--
--   [1,<next>,<last>,<flags>,<spec>,<zone>,<job name>,<key>,<jitter>,<missed>,<args>]
--
-- next is the epoch second of the schedule's next tick (0: none), last that of the last tick it
-- enqueued (0: none), flags 1 when it is paused, 0 otherwise. Ticks are computed in Go, never here.
--
-- A bucket's score in schedules:due with decimals is a claim's token (schedule_claim.lua): a write
-- of a schedule the claim may hold drops them (scheduleUnclaim; commits and other claims write the
-- score anew), so that the claim's commit finds its token gone and commits nothing of the bucket.
--
-- uses: none
-- defines: scheduleHead, scheduleRecord, scheduleUnclaim

-- scheduleHead returns the next tick, last tick, flags and definition (the text after the flags'
-- comma, up to the closing bracket) of a record, each as text, or nil for a record of another form.
local function scheduleHead(rec)
  local nxt, last, flags, at = string.match(rec, '^%[1,(%d+),(%d+),([01]),()')
  if not at then return nil end
  return nxt, last, flags, string.sub(rec, at)
end

-- scheduleRecord writes a record from its head and definition.
local function scheduleRecord(nxt, last, flags, def)
  return '[1,' .. nxt .. ',' .. last .. ',' .. flags .. ',' .. def
end

-- scheduleUnclaim breaks the token of a claim holding any of buckets (a list, repeats allowed) in
-- schedules:due (top): a score with decimals is rounded up, so that its lease still ends when it did.
-- One bucket is read with ZSCORE, more with ZMSCORE (Redis 6.2, miniredis v2.30.3).
local function scheduleUnclaim(top, buckets)
  for i = 1, #buckets, 1000 do
    local part = {unpack(buckets, i, math.min(#buckets, i + 999))}
    local scores = #part == 1 and {redis.call('zscore', top, part[1])} or redis.call('zmscore', top, unpack(part))
    for j, v in ipairs(part) do
      local s = tonumber(scores[j])
      if s and s ~= math.floor(s) then redis.call('zadd', top, 'XX', string.format('%d', math.ceil(s)), v) end
    end
  end
end
