-- keychecks: for scripts that must not fail half-way on a key someone overwrote with another type.
--
-- uses: none
-- defines: isType, intOf, numOf
--
-- isType(key, t) is true when the key is missing or of type t.
-- intOf(key) is the key's integer (0 when missing), or nil when it is not a string holding an
-- integer that INCRBY accepts.
-- numOf(key) is the key's number, fractions allowed (0 when missing), or nil when it is not a
-- string holding a finite number.
local function isType(key, t)
  local k = redis.call('type', key).ok
  return k == 'none' or k == t
end
local function intOf(key)
  local v = redis.pcall('get', key)
  if type(v) == 'table' then return nil end
  if not v then return 0 end
  if #v > 18 or not string.match(v, '^%-?%d+$') then return nil end
  return tonumber(v)
end
local function numOf(key)
  local v = redis.pcall('get', key)
  if type(v) == 'table' then return nil end
  if not v then return 0 end
  local n = tonumber(v)
  if not n or n ~= n or n == math.huge or n == -math.huge then return nil end
  return n
end
