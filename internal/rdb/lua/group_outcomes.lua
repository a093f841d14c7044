-- Writes the outcomes a group's handler reported for single jobs of a call (GroupError): each failed
-- job goes to the retry set, or to the dead set once it has failed its last attempt; the call itself
-- is then acknowledged as done by the pool as usual.
--
-- keys: 2
-- uses: none
--
-- KEYS[1] retry set; KEYS[2] dead set
-- ARGV[1..] triples: "r" (retry) or "d" (dead), score (epoch second), the job's payload
--
-- Returns the number of jobs written.

for i = 1, #ARGV, 3 do
  local set = KEYS[1]
  if ARGV[i] == 'd' then set = KEYS[2] end
  redis.call('zadd', set, ARGV[i + 1], ARGV[i + 2])
end
return (#ARGV - #ARGV % 3) / 3
