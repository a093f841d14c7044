-- Ends bursts of debounced enqueues: moves each one's pending job from its hash into the scheduled
-- set, from which the requeuer queues it as any scheduled job, and drops the burst from the index.
-- The requeuer calls it with the bursts the index says are due; the Client's "run now" with one
-- burst, moved whatever its run time. The burst's hash goes: an enqueue of the burst after this
-- starts a new one.
--
-- keys: 2
-- uses: none
--
-- KEYS[1] the index of pending bursts (<ns>:debounces); KEYS[2] the scheduled set
-- ARGV[1] the burst hashes' prefix (<ns>:debounce:); ARGV[2] "now" to move the bursts at once, with
--   the server's clock as their job's run time, else "due" to move only those whose run time has
--   come; ARGV[3] the pending payload the caller saw ("" for any): a burst whose job was replaced
--   since is left; ARGV[4..] the bursts' members in the index (<name>\n<id>)
--
-- Returns {how many jobs it moved, the server's clock in epoch seconds} (the run time a job moved at
-- once got). A member of the index whose burst holds no job (it is over, or was written by hand)
-- leaves the index; one not yet due (moved later by hand) gets its run time back.

local now = tonumber(redis.call('time')[1])
local index, sched, prefix, atOnce, want = KEYS[1], KEYS[2], ARGV[1], ARGV[2] == 'now', ARGV[3]
local moved = 0
for i = 4, #ARGV do
  local m = ARGV[i]
  local name, id = string.match(m, '^(.-)\n(.*)$')
  local h = name and redis.pcall('hmget', prefix .. name .. ':{' .. id .. '}', 'pending', 'run_at')
  local pending, runAt = type(h) == 'table' and h[1], type(h) == 'table' and tonumber(h[2])
  if not pending then
    if not atOnce then redis.call('zrem', index, m) end
  elseif want ~= '' and pending ~= want then
    -- replaced since the caller looked: not the job it meant
  elseif not atOnce and runAt and runAt > now then
    redis.call('zadd', index, runAt, m)
  else
    redis.call('zadd', sched, atOnce and now or (runAt or now), pending)
    redis.call('del', prefix .. name .. ':{' .. id .. '}')
    redis.call('zrem', index, m)
    moved = moved + 1
  end
end
return {moved, now}
