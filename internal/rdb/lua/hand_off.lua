-- Pushes a job without a key as the plain enqueue does (onto its queue, with a wake-up), except
-- when its queue is empty, the name is neither paused, limited nor rate limited, and a live pool
-- waits for the name: then the job goes straight into that pool's in-progress list and to the pool
-- in a message on its own channel (a hand-off: "<the pool's epoch>:<its number>:<length of the
-- name>:<name><payload>"), so that the pool runs it without a fetch. The keys of the pool (its heartbeat
-- <ns>:worker_pools:<pool>, which holds its epoch, the name's in-progress list of the pool, and
-- <ns>:handoffs:<pool>, the count of hand-offs made to it, 24 h TTL) are derived from the pool ID it
-- picks from the set. The pool stays in the set while the hand-offs made to it stay below the
-- handoff_to its heartbeat hash holds (exchange.lua writes it from the pool's room); the hand-off
-- that reaches it, or finds none, takes the pool off, as does one that finds no heartbeat for it
-- or that the pool does not receive.
--
-- keys: 6
-- uses: none
--
-- KEYS[1] jobs list; KEYS[2] known_jobs; KEYS[3] the name's idle_pools set; KEYS[4] paused flag;
--   KEYS[5] max_concurrency; KEYS[6] rate state
-- ARGV[1] payload; ARGV[2] job name; ARGV[3] "1" to register the name in known_jobs; ARGV[4]
--   wake-up channel; ARGV[5] the namespace's prefix (<ns>:)
--
-- Returns the queue's length after the push: 0 for a hand-off.

local jobs, payload, name, prefix = KEYS[1], ARGV[1], ARGV[2], ARGV[5]
if ARGV[3] == '1' then redis.call('sadd', KEYS[2], name) end
if redis.call('llen', jobs) == 0 then
  local m = redis.call('mget', KEYS[4], KEYS[5], KEYS[6])
  if not m[1] and not m[3] and (tonumber(m[2] or '0') or 1) <= 0 then
    for _ = 1, 3 do
      local pool = redis.pcall('srandmember', KEYS[3])
      if type(pool) ~= 'string' then break end
      -- The pool's epoch, from its heartbeat: a pool that reads the hand-off after finding itself
      -- reaped since (its epoch moved on) leaves the job, which the reaper put back.
      local hb = redis.pcall('hmget', prefix .. 'worker_pools:' .. pool, 'epoch', 'handoff_to')
      local epoch = hb[1]
      if type(epoch) == 'string' then
        -- Counted before it is sent, the count its number: the pool's fetches leave room for the
        -- hand-offs it has not read (exchange.lua), and a sweep tells it which it put back (sweep.lua).
        local count = prefix .. 'handoffs:' .. pool
        local seq = redis.pcall('incr', count)
        if type(seq) == 'number' then
          redis.call('expire', count, 86400)
          local inprogress = jobs .. ':' .. pool .. ':inprogress'
          if type(redis.pcall('lpush', inprogress, payload)) == 'number' then
            local msg = epoch .. ':' .. seq .. ':' .. #name .. ':' .. name .. payload
            if redis.call('publish', prefix .. 'handoff:' .. pool, msg) > 0 then
              if seq >= (tonumber(hb[2] or '') or 0) then redis.call('srem', KEYS[3], pool) end
              return 0
            end
            redis.call('lrem', inprogress, 1, payload)
          end
          redis.call('decr', count)
        end
      end
      redis.call('srem', KEYS[3], pool)
    end
  end
end
local n = redis.call('lpush', jobs, payload)
redis.call('publish', ARGV[4], name)
return n
