-- Removes one member from a sorted set and, only if it was still there, the unique lock that guarded
-- it, so a job deleted twice never frees a lock that a newer job holds. A removed job's workflow
-- state learns that it will not run (removedByHand).
--
-- keys: varies
-- uses: workflow, removedbyhand
--
-- KEYS[1] sorted set; KEYS[2] (optional) unique lock to delete with it
-- ARGV[1] member; ARGV[2..7] (optional) the job's workflow state, see lib/removedbyhand.lua
--
-- Returns 1 when removed, 0 when the member was gone.

if redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  if KEYS[2] then redis.call('del', KEYS[2]) end
  removedByHand()
  return 1
end
return 0
