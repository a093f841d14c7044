-- Writes the running state and progress of jobs with a record (tracked jobs, and jobs of names whose
-- pools keep records), for the pool's observer, at most once a second per worker. A job's write
-- applies only while the job is still in the pool's in-progress list: the outcome of its attempt,
-- which removes it from the list and writes the end into the record in one script, may have come
-- first (the two writes travel on different connections), and an attempt that ended must not look
-- running again.
--
-- keys: varies
-- uses: keychecks
--
-- KEYS: per job, its record (<ns>:job:<id>) and the pool's in-progress list that holds it
-- ARGV[1] pool ID; ARGV[2] namespace prefix; then per job 8 fields: its in-progress entry, job
--   name, attempt (1 for the first), started at (epoch seconds), keep seconds (a record this
--   creates lives at least this long, and a day at least), progress fraction ("" for none),
--   progress message, progress at (epoch seconds)
--
-- Returns the number of records written.

-- pc runs a command, nil when Redis refuses it (a key of another type).
local function pc(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then return nil end
  return r
end
local pool = ARGV[1]
local DAY = 86400

-- held reports whether list holds entry (LPOS where the server has it, a scan otherwise).
local function held(list, entry)
  local pos = pcallReply('lpos', list, entry)
  if type(pos) == 'number' then return true end
  if type(pos) ~= 'table' then return false end -- nil: not there
  if string.find(pos.err or '', 'WRONGTYPE', 1, true) then return false end
  local all = redis.pcall('lrange', list, 0, -1)
  if type(all) ~= 'table' or all.err then return false end
  for _, v in ipairs(all) do
    if v == entry then return true end
  end
  return false
end

local written = 0
for i = 1, #KEYS / 2 do
  local rk, inprogress = KEYS[2 * i - 1], KEYS[2 * i]
  local a = 3 + 8 * (i - 1)
  local entry, name, attempt, startedAt, keep = ARGV[a], ARGV[a+1], ARGV[a+2], ARGV[a+3], tonumber(ARGV[a+4]) or 0
  local frac, msg, at = ARGV[a+5], ARGV[a+6], ARGV[a+7]
  local existed = redis.pcall('exists', rk)
  if type(existed) == 'number' and held(inprogress, entry) then
    if pc('hset', rk, 'name', name, 'state', 'running', 'started_at', startedAt, 'attempt', attempt, 'pool', pool) then
      if frac ~= '' then
        pc('hset', rk, 'progress', frac, 'progress_msg', msg, 'progress_at', at)
      else
        pc('hdel', rk, 'progress', 'progress_msg', 'progress_at')
      end
      -- A record written here lives at least a day, should the pool die with the job: the job's
      -- end sets its time to live to its keep.
      if existed == 0 then
        pc('expire', rk, math.max(keep, DAY))
      else
        local ttl = pc('ttl', rk)
        if ttl and ttl >= 0 and ttl < DAY then pc('expire', rk, DAY) end
      end
      written = written + 1
    end
  end
end
return written
