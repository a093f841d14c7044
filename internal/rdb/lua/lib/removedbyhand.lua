-- removedbyhand: tells a job's workflow state that it was removed by hand and will not run: a batch
-- member still pending counts as dead, so its batch can complete, and the jobs waiting for a tracked
-- job go to the dead set, and a keyed retry that kept its key's slot ("key_hold") frees it.
--
-- uses: workflow, keyed
-- defines: removedByHand
--
-- removedByHand() reads ARGV[2..7], when given: namespace prefix, wake-up channel, job ID, batch ID,
-- "1" for a tracked job, "1" when the job had not ended (a dead job was counted when it died); then
-- ARGV[8], ARGV[9], for a job that holds its key's slot: the name's keyed prefix and the key.
local function removedByHand()
  if not ARGV[7] or ARGV[7] ~= '1' then return end
  local prefix, channel, id, batch = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
  if ARGV[9] then
    local k = keyedKeys(ARGV[8])
    local name = string.sub(ARGV[8], #prefix + 7, -2) -- <ns>:keyed:<name>:
    keyedRelease(k, ARGV[9], 1, true, name, channel)
  end
  local now = tonumber(redis.call('time')[1])
  if batch ~= '' then batchCount(prefix, batch, WK - 1, now, channel) end
  if ARGV[6] == '1' then
    pc('hset', prefix .. 'job:' .. id, 'state', 'deleted', 'finished_at', now)
    announceEnd(prefix, id)
    settle(prefix, prefix .. 'job:' .. id .. ':next', false, 'job ' .. id .. ' deleted', now, channel)
  end
end
