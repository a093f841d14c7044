-- Deletes or pauses one schedule. Deleting removes its record and its entry in the due index; pausing
-- flags its record and takes it out of the due index, so no tick of it is claimed until it is resumed
-- (a resume is a commit: schedule_commit.lua). The bucket's score in schedules:due is left as it is: a
-- lower bound, which the next claim of the bucket corrects; a claim holding the bucket loses its
-- token (scheduleUnclaim), so that its commit does not fire or write the schedule again.
--
-- keys: 2
-- uses: schedules
--
-- KEYS[1] schedules hash; KEYS[2] schedules:due
-- ARGV[1] the schedule's bucket key (<ns>:schedules:due:<bucket>); ARGV[2] its ID; ARGV[3] "delete"
--   or "pause"; ARGV[4] its bucket (the member of schedules:due)
--
-- Returns 1 when the schedule existed (and was deleted, or is paused), 0 when it did not.
-- Errors: "WORKSCHED damaged" when pausing a record of another form (nothing is changed).

local H, top, key, id, op, bucket = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if op == 'delete' then
  redis.call('zrem', key, id)
  scheduleUnclaim(top, {bucket})
  return redis.call('hdel', H, id)
end
local rec = redis.call('hget', H, id)
if not rec then return 0 end
local nxt, last, flags, def = scheduleHead(rec)
if not def then return redis.error_reply('WORKSCHED damaged') end
if flags ~= '1' then redis.call('hset', H, id, scheduleRecord(nxt, last, '1', def)) end
redis.call('zrem', key, id)
scheduleUnclaim(top, {bucket})
return 1
