-- keychecks: for scripts that must not fail half-way on a key someone overwrote with another type.
--
-- uses: none
-- defines: statusText, keyType, pcallReply, lacking, wrongType, isType, intOf, numOf
--
-- statusText(r) is the text of a status reply (TYPE's, say). Every script reads status replies
-- through it: Redis gives them to Lua as a table {ok = text}, but miniredis before v2.19.0 gives
-- the plain text, on which .ok is nil.
-- keyType(key) is the key's type as TYPE names it ('none' when it is missing).
-- pcallReply(...) runs a command as redis.pcall does: its reply, or {err = text} when the server
-- refuses it. A script that tells errors apart (a key of another type from a command or an argument
-- the server lacks) calls it: miniredis before v2.36.0 hands redis.pcall's errors to Lua as nil,
-- without their text, which the helper then gets by running the command again through redis.call
-- under Lua's pcall (a refused command changed nothing).
-- lacking(r) is true when r, a reply of pcallReply, is an error other than a key's wrong type: a
-- command or an argument the server lacks.
-- wrongType(r, need) is true when r, a reply of pcallReply, is the error of a key of another type,
-- and false when it is no error; any other error stops the script with one that says the server
-- lacks need.
-- isType(key, t) is true when the key is missing or of type t.
-- intOf(key) is the key's integer (0 when missing), or nil when it is not a string holding an
-- integer that INCRBY accepts.
-- numOf(key) is the key's number, fractions allowed (0 when missing), or nil when it is not a
-- string holding a finite number.
local function statusText(r)
  if type(r) == 'table' then return r.ok end
  return r
end
local function keyType(key) return statusText(redis.call('type', key)) end
local function pcallReply(...)
  local r = redis.pcall(...)
  if r ~= nil then return r end
  local ok, e = pcall(redis.call, ...)
  if ok then return e end
  if type(e) == 'table' then e = e.err end
  return {err = tostring(e)}
end
local function lacking(r)
  return type(r) == 'table' and r.err ~= nil and not string.find(r.err, 'WRONGTYPE', 1, true)
end
local function wrongType(r, need)
  if type(r) ~= 'table' or not r.err then return false end
  if lacking(r) then error('the server lacks ' .. need .. ': ' .. r.err) end
  return true
end
local function isType(key, t)
  local k = keyType(key)
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
