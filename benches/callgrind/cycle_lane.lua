-- A model of issue #38's shared lane for keys without limits of their own, with what fairness
-- needs kept in Redis: one sorted set of the jobs of every key ("<key>\n<payload>"), each scored by
-- its virtual start, max(vt, the key's last start + 1), where vt is the start of the last job taken;
-- a hash of each key's last start (the state a key with jobs in the lane keeps, so that its next job
-- queues behind them); a take is one ZPOPMIN, its jobs LPUSHed into an in-progress list and each
-- LREMed when done. Each take also sweeps a slice of the hash (HSCAN from a cursor kept in meta, as
-- many fields as jobs taken, HDEL of the starts behind vt): a key whose jobs are all taken keeps its
-- field only until the sweep passes. Or, "exact", a take reads the fields of the keys it took from
-- and drops those whose last start is the job taken. The enqueue makes the checks of types a script
-- makes before it writes; it leaves out what lane keys would not have (caps, overrides, limits).
--
-- keys: 0; ARGV[1] "fresh" (a key of its own for each job) or "10" (keys 0..9 in turn), ARGV[2]
-- jobs per round, ARGV[3] rounds, ARGV[4] what a round does: "fill" (enqueue only), "take" (take
-- and acknowledge), "take-nosweep" (the same, no field ever dropped), "take-exact" (the fields
-- dropped exactly), "full" (enqueue, then take and acknowledge as many) or "full-exact". Returns
-- the jobs enqueued (fill) or taken.
local p = 'cg:keyed:a:'
local lane, last, meta, inprogress = p .. 'lane', p .. 'last', p .. 'meta', p .. 'pool:inprogress'
local fresh, n, rounds, mode = ARGV[1] == 'fresh', tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local seq = tonumber(redis.call('get', p .. 'seq') or '0')

local function enqueue()
  for _, key in ipairs({lane, last, meta}) do redis.call('type', key) end
  local vt = tonumber(redis.call('hget', meta, 'vt') or '') or 0
  local keys, payloads = {}, {}
  for i = 1, n do
    seq = seq + 1
    local K = fresh and tostring(1000000 + seq) or tostring(seq % 10)
    keys[i] = K
    payloads[i] = K .. '\n{"name":"a","id":"' .. seq .. '","t":1,"args":null,"key":"' .. K .. '"}'
  end
  local cur = redis.call('hmget', last, unpack(keys))
  local lastOf, add, set, na, ns = {}, {}, {}, 0, 0
  for i = 1, n do
    local K = keys[i]
    local l = lastOf[K]
    if l == nil then l = tonumber(cur[i] or '') or false end
    local s = vt
    if l and l + 1 > vt then s = l + 1 end
    lastOf[K] = s
    add[na + 1], add[na + 2] = tostring(s), payloads[i]
    na = na + 2
  end
  for K, s in pairs(lastOf) do
    set[ns + 1], set[ns + 2] = K, tostring(s)
    ns = ns + 2
  end
  local before = redis.call('zcard', lane)
  redis.call('zadd', lane, unpack(add, 1, na))
  redis.call('hset', last, unpack(set, 1, ns))
  redis.call('hincrby', meta, 'waiting', n)
  if before == 0 then redis.call('publish', 'cg:wake:keyed', 'a') end
end

local function take(sweep)
  local popped = redis.call('zpopmin', lane, n)
  if #popped == 0 then return 0 end
  local m = redis.call('hmget', meta, 'waiting', 'cursor')
  local out, no = {}, 0
  for i = 1, #popped, 2 do
    no = no + 1
    out[no] = popped[i]
  end
  local vt, cursor = popped[#popped], m[2] or '0'
  redis.call('lpush', inprogress, unpack(out, 1, no))
  if sweep == 'exact' then
    -- The keys whose last start is the job taken have no job left in the lane: their fields go.
    local keys = {}
    for i = 1, no do keys[i] = string.sub(out[i], 1, string.find(out[i], '\n', 1, true) - 1) end
    local cur = redis.call('hmget', last, unpack(keys, 1, no))
    local del, nd = {}, 0
    for i = 1, no do
      if cur[i] == popped[2 * i] then
        nd = nd + 1
        del[nd] = keys[i]
      end
    end
    if nd > 0 then redis.call('hdel', last, unpack(del, 1, nd)) end
  elseif sweep then
    local sc = redis.call('hscan', last, cursor, 'COUNT', tostring(n))
    local del, nd, vtn, f = {}, 0, tonumber(vt), sc[2]
    for i = 1, #f, 2 do
      if tonumber(f[i + 1]) < vtn then
        nd = nd + 1
        del[nd] = f[i]
      end
    end
    if nd > 0 then redis.call('hdel', last, unpack(del, 1, nd)) end
    cursor = sc[1]
  end
  redis.call('hset', meta, 'vt', vt, 'waiting', tostring(math.max(0, (tonumber(m[1] or '') or 0) - no)), 'cursor', cursor)
  for i = 1, no do redis.call('lrem', inprogress, '-1', out[i]) end
  return no
end

local total = 0
for _ = 1, rounds do
  if mode == 'fill' then
    enqueue()
    total = total + n
  else
    if mode == 'full' or mode == 'full-exact' then enqueue() end
    local sweep = mode ~= 'take-nosweep'
    if mode == 'take-exact' or mode == 'full-exact' then sweep = 'exact' end
    total = total + take(sweep)
  end
end
redis.call('set', p .. 'seq', tostring(seq))
return total
