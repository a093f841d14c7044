-- schedules: the record of a schedule (schedules.go; docs/redis-layout.md, "Schedules"), a JSON array
-- whose head the scripts read and write and whose rest, the definition, they only compare:
--
--   [1,<next>,<last>,<flags>,<spec>,<zone>,<job name>,<key>,<jitter>,<missed>,<args>]
--
-- next is the epoch second of the schedule's next tick (0: none), last that of the last tick it
-- enqueued (0: none), flags 1 when it is paused, 0 otherwise. Ticks are computed in Go, never here.
--
-- uses: none
-- defines: scheduleHead, scheduleRecord

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
