-- Moves one member from a sorted set to another sorted set under a new payload, if it is still
-- there: a payload that cannot be decoded goes to dead with its reason this way.
--
-- keys: 2
-- uses: keychecks
--
-- KEYS[1] source set; KEYS[2] destination set
-- ARGV[1] member; ARGV[2] destination score; ARGV[3] destination payload
--
-- Returns 1 when moved, 0 when the member was gone.

if isType(KEYS[2], 'zset') and redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  redis.call('zadd', KEYS[2], ARGV[2], ARGV[3])
  return 1
end
return 0
