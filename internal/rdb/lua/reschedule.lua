-- Replaces a member of the scheduled or retry set by hand (a new run time, new args), if it is still
-- there.
--
-- keys: 1
-- uses: none
--
-- KEYS[1] the set
-- ARGV[1] the member; ARGV[2] the new score; ARGV[3] the new member; ARGV[4] the due channel
--
-- Returns 1 when replaced, 0 when the member was gone (it is due, or running, or was deleted).

if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('zadd', KEYS[1], ARGV[2], ARGV[3])
-- Pools waiting for due work learn of a sooner time at once, as when a job is scheduled.
redis.call('publish', ARGV[4], ARGV[2])
return 1
