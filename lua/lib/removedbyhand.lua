-- removedbyhand: tells a job's workflow state that it was removed by hand and will not run: a batch
-- member still pending counts as dead, so its batch can complete, and the jobs waiting for a tracked
-- job go to the dead set.
--
-- uses: workflow
-- defines: removedByHand
--
-- removedByHand() reads ARGV[2..7], when given: namespace prefix, wake-up channel, job ID, batch ID,
-- "1" for a tracked job, "1" when the job had not ended (a dead job was counted when it died).
local function removedByHand()
  if not ARGV[7] or ARGV[7] ~= '1' then return end
  local prefix, channel, id, batch = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
  local now = tonumber(redis.call('time')[1])
  if batch ~= '' then batchCount(prefix, batch, WK - 1, now, channel) end
  if ARGV[6] == '1' then
    pc('hset', prefix .. 'job:' .. id, 'state', 'deleted', 'finished_at', now)
    settle(prefix, prefix .. 'job:' .. id .. ':next', false, 'job ' .. id .. ' deleted', now, channel)
  end
end
