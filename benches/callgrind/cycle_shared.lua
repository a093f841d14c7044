-- The least dispatch of keyed jobs kept in one sorted set for all keys, scored by virtual start
-- time (issue #38's proposal for keys without limits of their own): ZPOPMIN of the take, which is
-- already in fair order, the turn's virtual time written once, LPUSH into an in-progress list and
-- LREM of each when done. With ARGV[1] 1, each key's running count too (HINCRBY when taken, and
-- lowered, the field dropped at 0, when done): what a per-key limit would add; with ARGV[1] 2 the
-- same counts kept in one HMGET and one HSET (and HDEL) per take and per release. A job over its
-- key's limit would wait in a list of its key until a slot frees; these setups never put one there,
-- so that path is not counted. With ARGV[1] 3, a limit of one job a key kept without a count: only a
-- key's next job is in the set (setup_shared.lua "head"), and each release moves the key's following
-- job from its list into the set. With ARGV[1] 4, the same with the bookkeeping the library keeps
-- beside it (setup_shared.lua "headbook"): a key's lane field marks its slot taken ('r' while its
-- job runs, the score of its next job in the set, dropped when it has none), and the waiting index
-- holds the jobs in its list (LLEN after each move, the entry dropped at 0). With ARGV[1] 5, every
-- job stays in the set (as in modes 0 to 2) and a limit of one is kept by mode 2's counts, in a
-- running hash made a hashtable once (a member too long to be a key stays in it): a job whose key
-- runs would wait in a list of its key, which this shape (a key's jobs a turn apart) never needs.
-- With ARGV[1] 6, the same with the waiting index lowered for each job taken (ZINCRBY, a call per
-- job; setup_shared.lua "waiting" writes the index), as Client.Keys reads it.
--
-- keys: 0; ARGV[1] 0 (no counts), 1 (a call per job), 2 (calls per take), 3 (next job only), 4
-- (next job only, with its bookkeeping), 5 (every job in the set, counts per take) or 6 (5 with the
-- waiting index),
-- ARGV[2] jobs per take, ARGV[3] takes. Returns the jobs taken.
local p = 'cg:keyed:a:'
local mode, n, rounds = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local running = p .. 'running'
local total = 0
-- counts adds d to the running counts of keys (a list, a key once or more), in one HMGET and one
-- HSET (and one HDEL of the counts that reach 0) for the whole list: mode 2.
local function counts(keys, no, d)
  local uniq, seen, nu = {}, {}, 0
  for i = 1, no do
    local K = keys[i]
    if not seen[K] then
      nu = nu + 1
      uniq[nu] = K
      seen[K] = 0
    end
    seen[K] = seen[K] + d
  end
  local cur = redis.call('hmget', running, unpack(uniq, 1, nu))
  local set, ns, del, nd = {}, 0, {}, 0
  for i = 1, nu do
    local v = (tonumber(cur[i]) or 0) + seen[uniq[i]]
    if v > 0 then
      set[ns + 1], set[ns + 2] = uniq[i], tostring(v)
      ns = ns + 2
    else
      nd = nd + 1
      del[nd] = uniq[i]
    end
  end
  if ns > 0 then redis.call('hset', running, unpack(set, 1, ns)) end
  if nd > 0 then redis.call('hdel', running, unpack(del, 1, nd)) end
end
if mode >= 5 then redis.call('hset', running, '{' .. string.rep('-', 78) .. '}', '0') end
for _ = 1, rounds do
  local popped = redis.call('zpopmin', p .. 'shared', n)
  if #popped == 0 then break end
  local out, keys, no = {}, {}, 0
  for i = 1, #popped, 2 do
    local e = popped[i]
    no = no + 1
    out[no] = e
    if mode > 0 then
      local K = string.sub(e, 1, string.find(e, '\n', 1, true) - 1)
      keys[no] = K
      if mode == 1 then redis.call('hincrby', running, K, '1') end
    end
  end
  if mode == 2 or mode >= 5 then counts(keys, no, 1) end
  if mode == 6 then
    for i = 1, no do redis.call('zincrby', p .. 'waiting', '-1', keys[i]) end
  end
  if mode == 4 then
    local set = {}
    for i = 1, no do set[2 * i - 1], set[2 * i] = keys[i], 'r' end
    redis.call('hset', p .. 'lane', unpack(set, 1, 2 * no))
  end
  redis.call('hset', p .. 'meta', 'vt', popped[#popped])
  redis.call('lpush', p .. 'pool:inprogress', unpack(out, 1, no))
  for i = 1, no do
    redis.call('lrem', p .. 'pool:inprogress', '-1', out[i])
    if mode == 1 and redis.call('hincrby', running, keys[i], '-1') <= 0 then
      redis.call('hdel', running, keys[i])
    end
  end
  if mode == 2 or mode >= 5 then counts(keys, no, -1) end
  if mode == 4 then
    -- The key's next job joins the set in its slot (the lane field reads 'r' for each key here: the
    -- ack reads it to know the key's slot is its own).
    local marks = redis.call('hmget', p .. 'lane', unpack(keys, 1, no))
    local add, na, set, ns, del, nd, upd, nu, gone, ng = {}, 0, {}, 0, {}, 0, {}, 0, {}, 0
    for i = 1, no do
      if marks[i] == 'r' then
        local q = p .. '{' .. keys[i] .. '}'
        local nxt = redis.call('rpop', q)
        if nxt then
          local s = tostring(tonumber(popped[2 * i]) + 1)
          add[na + 1], add[na + 2] = s, nxt
          na = na + 2
          set[ns + 1], set[ns + 2] = keys[i], s
          ns = ns + 2
          local left = redis.call('llen', q)
          if left > 0 then
            upd[nu + 1], upd[nu + 2] = left, keys[i]
            nu = nu + 2
          else
            ng = ng + 1
            gone[ng] = keys[i]
          end
        else
          nd = nd + 1
          del[nd] = keys[i]
        end
      end
    end
    if na > 0 then redis.call('zadd', p .. 'shared', unpack(add, 1, na)) end
    if ns > 0 then redis.call('hset', p .. 'lane', unpack(set, 1, ns)) end
    if nd > 0 then redis.call('hdel', p .. 'lane', unpack(del, 1, nd)) end
    if nu > 0 then redis.call('zadd', p .. 'waiting', 'XX', unpack(upd, 1, nu)) end
    if ng > 0 then redis.call('zrem', p .. 'waiting', unpack(gone, 1, ng)) end
  end
  if mode == 3 then
    -- A limit of one: the key's next job joins the set as this one ends, a turn later.
    local add, na = {}, 0
    for i = 1, no do
      local nxt = redis.call('rpop', p .. '{' .. keys[i] .. '}')
      if nxt then
        add[na + 1], add[na + 2] = tostring(tonumber(popped[2 * i]) + 1), nxt
        na = na + 2
      end
    end
    if na > 0 then redis.call('zadd', p .. 'shared', unpack(add, 1, na)) end
  end
  total = total + no
end
return total
