-- Makes the enqueue script it wraps idempotent by the job's ID: the script runs only when no job
-- was enqueued under that ID within its mark's lifetime, and its success leaves the mark. The loader
-- (scripts.go, loadWithJobID) puts the wrapped script's helpers before this text and the script in
-- place of the "wrapped" comment below; on its own this file runs an empty script.
--
-- keys: varies
-- uses: none
--
-- KEYS the wrapped script's, then the ID's mark (<ns>:jobid:<id>)
-- ARGV the wrapped script's, then how many seconds the mark lives
--
-- Returns the wrapped script's reply. Errors: "WORKID taken" when the mark exists (nothing runs or
-- is written); the wrapped script's errors (then no mark is left, so the same ID may be tried again).

local idMark, idKeep = table.remove(KEYS), table.remove(ARGV)
if redis.call('exists', idMark) == 1 then return redis.error_reply('WORKID taken') end
local reply = (function()
--[[wrapped]]
end)()
if not (type(reply) == 'table' and reply.err) then redis.call('set', idMark, '1', 'EX', idKeep) end
return reply
