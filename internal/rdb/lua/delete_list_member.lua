-- Removes every copy of one exact member from a list and, only if something was removed, the unique
-- lock that guarded it, so deleting a job twice never frees a newer job's lock. A removed job's
-- workflow state learns that it will not run (removedByHand).
--
-- keys: varies
-- uses: workflow, removedbyhand
--
-- KEYS[1] list; KEYS[2] (optional) unique lock to delete with it
-- ARGV[1] member; ARGV[2..7] (optional) the job's workflow state, see lib/removedbyhand.lua
--
-- Returns the number of copies removed.

local n = redis.call('lrem', KEYS[1], 0, ARGV[1])
if n > 0 and KEYS[2] then redis.call('del', KEYS[2]) end
if n > 0 then removedByHand() end
return n
