-- takeAndAck: the library's keyed fetch and acknowledgement of one take, for the cycle scripts that
-- run on internal/rdb/lua/lib/keychecks.lua and keyed.lua (run.sh and lane.sh put this file between
-- those and the script): keyedTake of up to n jobs of k into inprogress, then LREM of each entry and,
-- as the exchange script's acknowledgement does, for a name whose running counts are kept only, the
-- cut of each entry's key and keyedReleaseMany of the keys (d: the name's per-key defaults). Returns
-- the jobs taken.
local function takeAndAck(k, n, inprogress, d)
  local out = {}
  local took = keyedTake(k, n, inprogress, d, function() return 0 end, out) or 0
  local counting = redis.pcall('hget', k.meta, 'counts') ~= '0'
  local ended = {}
  for _, e in ipairs(out) do
    redis.call('lrem', inprogress, '-1', e)
    if counting then
      local K = string.sub(e, 1, string.find(e, '\n', 1, true) - 1)
      ended[K] = (ended[K] or 0) + 1
    end
  end
  if next(ended) then keyedReleaseMany(k, ended, d, 'a', 'cg:wake') end
  return took
end
