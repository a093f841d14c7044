package work

// This file is the one place that knows Redis: the key names of the documented layout, the Lua scripts
// that move a job from one state to the next, and the store type whose methods the rest of the package
// calls. No other file builds a key or sends a command.
//
// Every script touches only keys of one namespace, so a namespace written with a hash tag ("{app}")
// keeps every script on one Redis Cluster slot. Scripts never re-encode job JSON: payload bytes are
// copied as opaque strings, and any new payload (a retry, a dead-letter record) is encoded in Go.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// redisNamespacePrefix returns the key prefix of a namespace: the namespace plus ":" unless it already
// ends in ":"; the empty namespace has no prefix.
func redisNamespacePrefix(namespace string) string {
	if namespace != "" && !strings.HasSuffix(namespace, ":") {
		return namespace + ":"
	}
	return namespace
}

// keyspace builds the key names of one namespace (compat layout, byte for byte).
type keyspace struct{ p string }

func newKeyspace(namespace string) keyspace { return keyspace{p: redisNamespacePrefix(namespace)} }

func (k keyspace) jobsPrefix() string        { return k.p + "jobs:" }
func (k keyspace) jobs(name string) string   { return k.p + "jobs:" + name }
func (k keyspace) paused(name string) string { return k.jobs(name) + ":paused" }
func (k keyspace) lock(name string) string   { return k.jobs(name) + ":lock" }
func (k keyspace) lockInfo(name string) string {
	return k.jobs(name) + ":lock_info"
}
func (k keyspace) maxConcurrency(name string) string { return k.jobs(name) + ":max_concurrency" }
func (k keyspace) rate(name string) string           { return k.jobs(name) + ":rate" }
func (k keyspace) deadTrimmed() string               { return k.p + "dead_trimmed" }
func (k keyspace) inProgress(name, poolID string) string {
	return k.jobs(name) + ":" + poolID + ":inprogress"
}
func (k keyspace) scheduled() string               { return k.p + "scheduled" }
func (k keyspace) retry() string                   { return k.p + "retry" }
func (k keyspace) dead() string                    { return k.p + "dead" }
func (k keyspace) knownJobs() string               { return k.p + "known_jobs" }
func (k keyspace) workerPools() string             { return k.p + "worker_pools" }
func (k keyspace) heartbeat(poolID string) string  { return k.p + "worker_pools:" + poolID }
func (k keyspace) worker(workerID string) string   { return k.p + "worker:" + workerID }
func (k keyspace) lastPeriodicEnqueue() string     { return k.p + "last_periodic_enqueue" }
func (k keyspace) wakeChannel() string             { return k.p + "wake" }
func (k keyspace) cancelChannel() string           { return k.p + "cancel" }
func (k keyspace) dueChannel() string              { return k.p + "due" }
func (k keyspace) uniquePrefix(name string) string { return k.p + "unique:" + name + ":" }

// Workflow state (batch.go, chain.go): a batch's hash and the list of jobs waiting for it, the index
// of batches, and a job's record and the list of jobs waiting for it.
func (k keyspace) batch(id string) string     { return k.p + "batch:" + id }
func (k keyspace) batches() string            { return k.p + "batches" }
func (k keyspace) batchesExpiry() string      { return k.p + "batches_expiry" }
func (k keyspace) jobRecord(id string) string { return k.p + "job:" + id }

// stats is the hash of a job name's processed and failed counts on one UTC day (days since the
// epoch): fields "p:<epoch minute>" and "f:<epoch minute>".
func (k keyspace) stats(name string, day int64) string {
	return k.p + "stats:" + name + ":" + strconv.FormatInt(day, 10)
}

// statsTTLSeconds bounds how long per-minute counts are kept.
const statsTTLSeconds = 8 * 86400

// unique returns the unique-lock key of a job name and its args (or key map): the prefix, then the
// output of json.Encoder (sorted keys, HTML-escaped, trailing newline), nothing at all for nil args.
func (k keyspace) unique(name string, args map[string]interface{}) (string, error) {
	var buf bytes.Buffer
	buf.WriteString(k.uniquePrefix(name))
	if args != nil {
		if err := json.NewEncoder(&buf).Encode(args); err != nil {
			return "", err
		}
	}
	return buf.String(), nil
}

// uniqueTTLSeconds is how long a unique lock lives when no worker picks its job up.
const uniqueTTLSeconds = 86400

// Scripts. Each documents its KEYS and ARGV like a function signature.

// luaKeyChecks are helpers for scripts that must not fail half-way on a key someone overwrote with
// another type: isType(key, t) is true when the key is missing or of type t; intOf(key) is the key's
// integer (0 when missing), or nil when it is not a string holding an integer that INCRBY accepts.
const luaKeyChecks = `
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
`

// ---- Workflow state: batches, dependencies and job records (see batch.go and chain.go) ----
//
// A batch is the hash <ns>:batch:<id>: description, created_at, state (open, closed, complete),
// total, c, failed, keep, completed_at, the callbacks on_complete and on_success (the head of each
// callback job's payload, ending inside its args) with their job names, and complete_fired and
// success_fired once they ran. c counts the members still pending plus 2^26 times the members that
// died, so that a member's end is one HINCRBY. Members carry "batch":"<id>" in their payload; the
// hash keeps no list of them, so its size does not grow with the batch. <ns>:batches indexes batches
// by creation time; <ns>:batches_expiry holds the complete ones by when their hash expires, so that
// the pools' upkeep drops them from the index then (trimBatchesScript).
//
// A job record is the hash <ns>:job:<id>: name, state (waiting, queued, retrying, done, dead,
// dropped), enqueued_at, finished_at, attempts, pool, err, result, batch, keep; a job waiting for
// dependencies also holds its payload, the number of dependencies it waits for (deps) and what it
// does when one dies (policy: dead or run). <key>:next, for a job record or a batch, lists the IDs of
// the jobs waiting for it. Tracked jobs ("tracked":true in the payload) have a record from their
// enqueue; other jobs get one when they finish, if their pool keeps records for their name.

// luaWorkflow holds the transitions that more than one script makes. Every write to workflow state
// goes through pcall: a key another program overwrote with the wrong type must not stop the script
// that acknowledges a job (its effect is then lost, and Client.BatchStatus reports the damage).
var luaWorkflow = `
local WK = ` + strconv.Itoa(batchCounterUnit) + `
local function pc(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then return nil end
  return r
end
-- deadForm is a payload that never ran as a dead-set member: its failure appended to the object.
local function deadForm(payload, reason, now)
  return string.sub(payload, 1, -2) .. ',"fails":1,"err":' .. cjson.encode(reason) .. ',"failed_at":' .. now .. '}'
end
-- pushJob queues a payload for name, waking idle pools; a queue key of the wrong type sends the job
-- to the dead set instead, with the reason.
local function pushJob(prefix, name, payload, channel, now)
  local n = redis.pcall('lpush', prefix .. 'jobs:' .. name, payload)
  if type(n) ~= 'number' then
    redis.pcall('zadd', prefix .. 'dead', now, deadForm(payload, 'its queue key holds the wrong type', now))
    return false
  end
  if n == 1 then redis.call('publish', channel, name) end
  return true
end
-- settle tells the jobs waiting on something that ended (their IDs are listed at nextKey): with ok,
-- each waits for one dependency fewer and is queued when none is left; otherwise each goes to the
-- dead set with reason (or is queued all the same, when its policy is run), and the jobs waiting on
-- a job that goes to the dead set follow. The lists are small (a job's direct dependants).
local function settle(prefix, nextKey, ok, reason, now, channel)
  local work = {{nextKey, ok, reason}}
  while #work > 0 do
    local item = table.remove(work)
    local ids = pc('lrange', item[1], 0, -1) or {}
    pc('del', item[1])
    for _, id in ipairs(ids) do
      local rk = prefix .. 'job:' .. id
      local f = pc('hmget', rk, 'state', 'payload', 'name', 'policy', 'keep')
      if f and f[1] == 'waiting' and f[2] and f[3] then
        if item[2] or f[4] == 'run' then
          local left = pc('hincrby', rk, 'deps', -1)
          if not left or left <= 0 then
            pc('hset', rk, 'state', 'queued')
            pc('hdel', rk, 'payload', 'deps')
            pushJob(prefix, f[3], f[2], channel, now)
          end
        else
          local why = 'dependency failed: ' .. item[3]
          redis.pcall('zadd', prefix .. 'dead', now, deadForm(f[2], why, now))
          pc('hset', rk, 'state', 'dead', 'err', why, 'finished_at', now)
          pc('hdel', rk, 'payload', 'deps')
          pc('expire', rk, tonumber(f[5]) or 86400)
          work[#work + 1] = {rk .. ':next', false, 'job ' .. id .. ' did not run'}
        end
      end
    end
  end
end
-- batchComplete fires a closed batch whose members all ended (c is its counter): on_complete, and
-- on_success when none died, each receiving the counts in its args; then the jobs waiting for the
-- batch; then the bookkeeping expires after keep. The state change makes it happen once.
local function batchComplete(prefix, id, c, now, channel)
  local bk = prefix .. 'batch:' .. id
  local f = pc('hmget', bk, 'state', 'total', 'failed', 'on_complete', 'on_complete_name', 'on_success',
    'on_success_name', 'keep')
  if not f or f[1] ~= 'closed' then return false end
  local dead = math.floor(c / WK)
  local total = tonumber(f[2]) or 0
  pc('hset', bk, 'state', 'complete', 'completed_at', now)
  local tail = ',"batch_total":' .. total .. ',"batch_done":' .. (total - dead) .. ',"batch_dead":' .. dead ..
    ',"batch_failed":' .. (tonumber(f[3]) or 0) .. '}}'
  if f[4] and f[5] then
    pushJob(prefix, f[5], f[4] .. tail, channel, now)
    pc('hset', bk, 'complete_fired', now)
  end
  if dead == 0 and f[6] and f[7] then
    pushJob(prefix, f[7], f[6] .. tail, channel, now)
    pc('hset', bk, 'success_fired', now)
  end
  settle(prefix, bk .. ':next', dead == 0, 'batch ' .. id .. ' had ' .. dead .. ' dead members', now, channel)
  local keep = tonumber(f[8]) or 86400
  pc('expire', bk, keep)
  pc('zadd', prefix .. 'batches_expiry', now + keep, id)
  return true
end
-- batchCount adds delta to a batch's counter (-1: a member done; WK - 1: a member died; n: n members
-- added) and completes the batch when no member is left pending. A counter that comes back 0 + delta
-- from a batch with no state (expired, deleted) is removed rather than left behind without expiry.
local function batchCount(prefix, id, delta, now, channel)
  local bk = prefix .. 'batch:' .. id
  local c = pc('hincrby', bk, 'c', delta)
  if not c then return end
  if c == delta and not pc('hget', bk, 'state') then
    pc('del', bk)
    return
  end
  if delta < WK and c % WK == 0 then batchComplete(prefix, id, c, now, channel) end
end
-- record writes a job's record: its latest outcome, kept for the longer of keep and the record's own
-- keep from now.
local function record(prefix, id, name, state, final, attempts, pool, err, result, keep, batch, now)
  local rk = prefix .. 'job:' .. id
  local fields = {'name', name, 'state', state, 'attempts', attempts, 'pool', pool}
  if final then fields[#fields + 1] = 'finished_at'; fields[#fields + 1] = now end
  if err ~= '' then fields[#fields + 1] = 'err'; fields[#fields + 1] = err end
  if result ~= '' then fields[#fields + 1] = 'result'; fields[#fields + 1] = result end
  if batch ~= '' then fields[#fields + 1] = 'batch'; fields[#fields + 1] = batch end
  pc('hset', rk, unpack(fields))
  local own = tonumber(pc('hget', rk, 'keep') or '') or 0
  if own > keep then keep = own end
  if keep > 0 then pc('expire', rk, keep) end
end
`

// batchScript opens a batch, adds jobs to it and closes it, or any of these in that order, at once:
// the jobs of one call are queued together or not at all, and a closed batch whose members all
// ended fires its callbacks (luaWorkflow's batchComplete).
//
//	KEYS[1] the batch hash; KEYS[2] the batches index; KEYS[3] known_jobs; KEYS[3+i] the queue of
//	  job name i
//	ARGV[1] steps: 'o' open, 'a' add, 'c' close, in that order ("oac" does all three)
//	ARGV[2] namespace prefix; ARGV[3] wake-up channel; ARGV[4] batch ID
//	ARGV[5..10] (open) description, keep seconds, on_complete head, its job name, on_success head,
//	  its job name ("" for none)
//	ARGV[11..] (add) per job name i: name, count; then the payloads, name by name
//
// Errors: WORKBATCH exists / unknown / complete / empty (close of a batch without members), WRONGTYPE
// for a queue or batch key of another type; nothing is changed then. Returns "complete" when the
// close fired the callbacks at once, else "ok".
var batchScript = redis.NewScript(-1, luaKeyChecks+luaWorkflow+`
local steps, prefix, channel, id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local bk = KEYS[1]
if not isType(bk, 'hash') then
  return redis.error_reply('WRONGTYPE the batch key ' .. bk .. ' holds another type')
end
local state = redis.call('hget', bk, 'state')
if string.find(steps, 'o', 1, true) then
  if redis.call('exists', bk) == 1 then return redis.error_reply('WORKBATCH exists') end
  state = 'open'
elseif not state then
  return redis.error_reply('WORKBATCH unknown')
elseif state == 'complete' then
  return redis.error_reply('WORKBATCH complete')
end
local n = #KEYS - 3
if string.find(steps, 'a', 1, true) then
  for i = 4, #KEYS do
    if not isType(KEYS[i], 'list') then
      return redis.error_reply('WRONGTYPE the queue key ' .. KEYS[i] .. ' holds another type; nothing was queued')
    end
  end
end
local c = tonumber(redis.call('hget', bk, 'c') or '0') or 0
local total = tonumber(redis.call('hget', bk, 'total') or '0') or 0
local added = 0
for i = 1, n do added = added + tonumber(ARGV[10 + 2*i]) end
if string.find(steps, 'c', 1, true) and total + added == 0 then return redis.error_reply('WORKBATCH empty') end
local now = tonumber(redis.call('time')[1])
if string.find(steps, 'o', 1, true) then
  local fields = {'state', 'open', 'created_at', now, 'description', ARGV[5], 'keep', ARGV[6], 'total', 0, 'c', 0, 'failed', 0}
  if ARGV[7] ~= '' then
    fields[#fields+1] = 'on_complete'; fields[#fields+1] = ARGV[7]
    fields[#fields+1] = 'on_complete_name'; fields[#fields+1] = ARGV[8]
  end
  if ARGV[9] ~= '' then
    fields[#fields+1] = 'on_success'; fields[#fields+1] = ARGV[9]
    fields[#fields+1] = 'on_success_name'; fields[#fields+1] = ARGV[10]
  end
  redis.call('hset', bk, unpack(fields))
  redis.call('zadd', KEYS[2], now, id)
end
if added > 0 then
  local at = 11 + 2 * n
  for i = 1, n do
    local name, count = ARGV[9 + 2*i], tonumber(ARGV[10 + 2*i])
    redis.call('sadd', KEYS[3], name)
    local done = 0
    while done < count do
      local chunk = math.min(count - done, 1000)
      redis.call('lpush', KEYS[3+i], unpack(ARGV, at + done, at + done + chunk - 1))
      done = done + chunk
    end
    at = at + count
    redis.call('publish', channel, name)
  end
  c = redis.call('hincrby', bk, 'c', added)
  redis.call('hincrby', bk, 'total', added)
end
if string.find(steps, 'c', 1, true) and state == 'open' then
  redis.call('hset', bk, 'state', 'closed')
  if c % WK == 0 and batchComplete(prefix, id, c, now, channel) then return 'complete' end
end
return 'ok'
`)

// enqueueAfterScript enqueues jobs that wait for others: each gets a record, and is queued once every
// job and batch it names has succeeded (at once if they all have). Dependencies are checked before
// anything is written, so an unknown one changes nothing. A job of the call may name an earlier job
// of the same call (a chain).
//
//	KEYS[1] known_jobs
//	ARGV[1] namespace prefix; ARGV[2] wake-up channel; ARGV[3] number of jobs; then per job: ID, job
//	  name, payload, keep seconds, policy ('dead' or 'run'), dependency count d, then d dependencies,
//	  each 'j:<job ID>' or 'b:<batch ID>'
//
// Errors: WORKDEP unknown <dependency> (no record: never tracked, or expired), WRONGTYPE. Returns per
// job its state: 'queued', 'waiting' or 'dead' (a dependency had died and the policy is dead).
var enqueueAfterScript = redis.NewScript(-1, luaKeyChecks+luaWorkflow+`
local prefix, channel, n = ARGV[1], ARGV[2], tonumber(ARGV[3])
local jobs, a = {}, 4
for i = 1, n do
  local j = {id = ARGV[a], name = ARGV[a+1], payload = ARGV[a+2], keep = ARGV[a+3], policy = ARGV[a+4], deps = {}}
  local d = tonumber(ARGV[a+5])
  for k = 1, d do j.deps[k] = ARGV[a+5+k] end
  a = a + 6 + d
  jobs[i] = j
end
-- Check every dependency first.
local mine = {}
for _, j in ipairs(jobs) do
  if not isType(prefix .. 'jobs:' .. j.name, 'list') then
    return redis.error_reply('WRONGTYPE the queue key ' .. prefix .. 'jobs:' .. j.name .. ' holds another type')
  end
  for _, dep in ipairs(j.deps) do
    local kind, did = string.sub(dep, 1, 1), string.sub(dep, 3)
    if not (kind == 'j' and mine[did]) then
      local key = prefix .. (kind == 'b' and 'batch:' or 'job:') .. did
      if not isType(key, 'hash') then return redis.error_reply('WRONGTYPE the key ' .. key .. ' holds another type') end
      if not redis.call('hget', key, 'state') then return redis.error_reply('WORKDEP unknown ' .. dep) end
    end
  end
  mine[j.id] = true
end
local now = tonumber(redis.call('time')[1])
local out = {}
for i, j in ipairs(jobs) do
  local waiting, failed = 0, nil
  for _, dep in ipairs(j.deps) do
    local kind, did = string.sub(dep, 1, 1), string.sub(dep, 3)
    local key = prefix .. (kind == 'b' and 'batch:' or 'job:') .. did
    local state = redis.call('hget', key, 'state')
    if kind == 'b' then
      if state == 'complete' then
        local c = tonumber(redis.call('hget', key, 'c') or '0') or 0
        if c >= WK then failed = failed or ('batch ' .. did .. ' had dead members') end
      else
        waiting = waiting + 1
        redis.call('rpush', key .. ':next', j.id)
      end
    elseif state == 'done' then
    elseif state == 'dead' or state == 'dropped' then
      failed = failed or ('job ' .. did .. ' ' .. state)
    else
      waiting = waiting + 1
      redis.call('rpush', key .. ':next', j.id)
    end
  end
  local rk = prefix .. 'job:' .. j.id
  redis.call('sadd', KEYS[1], j.name)
  if failed and j.policy ~= 'run' then
    local why = 'dependency failed: ' .. failed
    redis.call('zadd', prefix .. 'dead', now, deadForm(j.payload, why, now))
    redis.call('hset', rk, 'name', j.name, 'state', 'dead', 'enqueued_at', now, 'finished_at', now, 'err', why, 'keep', j.keep)
    redis.call('expire', rk, tonumber(j.keep))
    settle(prefix, rk .. ':next', false, 'job ' .. j.id .. ' did not run', now, channel)
    out[i] = 'dead'
  elseif waiting > 0 then
    redis.call('hset', rk, 'name', j.name, 'state', 'waiting', 'enqueued_at', now, 'keep', j.keep,
      'payload', j.payload, 'deps', waiting, 'policy', j.policy)
    out[i] = 'waiting'
  else
    redis.call('hset', rk, 'name', j.name, 'state', 'queued', 'enqueued_at', now, 'keep', j.keep)
    pushJob(prefix, j.name, j.payload, channel, now)
    out[i] = 'queued'
  end
end
return out
`)

// exchangeScript is the pool's one round trip on the hot path: it records the outcomes of finished
// jobs, then moves jobs from the candidate queues into this pool's in-progress lists. Recording first
// frees concurrency slots the fetch may then use; a call with no outcomes only fetches, a call that
// asks for no jobs only records.
//
// A job's outcome is acted on only while the job is still in the in-progress list, so an outcome
// written twice (its reply was lost and the pool wrote it again) or after a reaper put the job back
// changes nothing. The concurrency counters (lock, lock_info) are kept for limited queues only: a
// queue without a MaxConcurrency is never gated by them.
//
// A rate limit of L jobs per P milliseconds is a GCRA over the queue's rate key, which holds the
// theoretical arrival time in ms (server clock): a burst of L, then one every P/L ms.
//
//	KEYS[1] retry set; KEYS[2] dead set; KEYS[3] scheduled set
//	KEYS[7g-3..7g+3], one group per queue g: jobs list, this pool's in-progress list, paused flag,
//	  lock counter, lock_info hash, max_concurrency, rate state
//	ARGV[1] pool ID; ARGV[2] wake-up channel; ARGV[3] G, the number of groups
//	ARGV[5g-1..5g+3], per group: job name, "1" when the pool counts it against a MaxConcurrency,
//	  share (jobs to fetch from it; -1: not a candidate), rate limit jobs and period in ms (0 0:
//	  none). Candidates are tried in the order given; what a queue cannot give passes to the next
//	  ones, so a candidate with a share of 0 may still give jobs.
//	then outcomes, each an op code and its arguments, to the end of ARGV:
//	  A g n p1..pn   n jobs of group g done, by their in-progress payloads
//	  R|D|S g p score member   move job p to the retry, dead or scheduled set as member
//	  Q g p          put job p back at the fetch end of its queue
//	  X g kind p score member prefix id batch keep tracked ukey err result attempts
//	                 job p with workflow state: the move of kind (A, F for dropped, R, D, S or Q),
//	                 then, once it is final (A, F, D), its record (kept keep seconds; 0 and not
//	                 tracked: none), the jobs waiting for it (tracked), its batch's counters and
//	                 callbacks, and the deletion of its unique lock ukey ("" none); see luaWorkflow
//	  T key ttl n field1 count1 .. fieldn countn   add counts to a per-minute stats hash
//
// Returns {done, status, counts, jobs}: done has a character per job of the A, R, D, S and Q ops,
// in order: '1' recorded, '0' no longer held, 'e' a destination holds the wrong type (the job stays
// in the in-progress list, from where the pool's sweep, its stop or a reaper puts it back);
// status[g] is 1 when group g gave what was asked (it may hold more), 0 when it ran out, -1 paused,
// -2 at its concurrency limit, -3 not a candidate, -4 past its rate limit, -5 a key of the wrong
// type; counts[g] the jobs taken from it; jobs the payloads, grouped by group in order (oldest first).
var exchangeScript = redis.NewScript(-1, luaKeyChecks+luaWorkflow+`
local pool, channel = ARGV[1], ARGV[2]
local NOW
local function serverNow()
  if not NOW then NOW = tonumber(redis.call('time')[1]) end
  return NOW
end
local G = tonumber(ARGV[3])
local a = 4 + 5 * G
local done, ended = {}, {}

-- end ends the hold on job p of group g; it returns the LREM reply or nil on a wrong-type key.
local function endHold(b, p)
  local r = redis.pcall('lrem', KEYS[b+2], -1, p)
  if type(r) ~= 'number' then return nil end
  return r
end

while a <= #ARGV do
  local op = ARGV[a]
  if op == 'T' then
    local key, ttl, n = ARGV[a+1], ARGV[a+2], tonumber(ARGV[a+3])
    for i = a + 4, a + 2 + 2 * n, 2 do redis.pcall('hincrby', key, ARGV[i], ARGV[i+1]) end
    redis.pcall('expire', key, ttl)
    a = a + 4 + 2 * n
  else
    local g = tonumber(ARGV[a+1])
    local b = 3 + 7 * (g - 1)
    if op == 'A' then
      local n = tonumber(ARGV[a+2])
      for i = a + 3, a + 2 + n do
        local r = endHold(b, ARGV[i])
        if not r then done[#done+1] = 'e'
        elseif r > 0 then done[#done+1] = '1'; ended[g] = (ended[g] or 0) + 1
        else done[#done+1] = '0' end
      end
      a = a + 3 + n
    elseif op == 'Q' then
      local p = ARGV[a+2]
      local r = endHold(b, p)
      if r and r > 0 then
        local n = redis.pcall('rpush', KEYS[b+1], p)
        if type(n) ~= 'number' then
          redis.call('lpush', KEYS[b+2], p)
          done[#done+1] = 'e'
        else
          if n == 1 then redis.call('publish', channel, ARGV[5*g-1]) end
          done[#done+1] = '1'; ended[g] = (ended[g] or 0) + 1
        end
      else
        done[#done+1] = r and '0' or 'e'
      end
      a = a + 3
    elseif op == 'X' then
      -- A job with workflow state: the move of its kind, then its batch, its record, the jobs
      -- waiting for it and its unique lock.
      local kind, p, score, member = ARGV[a+2], ARGV[a+3], ARGV[a+4], ARGV[a+5]
      local prefix, id, batch, keep, tracked = ARGV[a+6], ARGV[a+7], ARGV[a+8], tonumber(ARGV[a+9]), ARGV[a+10]
      local ukey, err, result, attempts = ARGV[a+11], ARGV[a+12], ARGV[a+13], ARGV[a+14]
      local r = endHold(b, p)
      local ok = r and r > 0
      if ok and (kind == 'R' or kind == 'D' or kind == 'S') then
        local set = KEYS[3]
        if kind == 'R' then set = KEYS[1] elseif kind == 'D' then set = KEYS[2] end
        if type(redis.pcall('zadd', set, score, member)) ~= 'number' then
          redis.call('lpush', KEYS[b+2], p)
          ok, r = false, nil
        end
      elseif ok and kind == 'Q' then
        local n = redis.pcall('rpush', KEYS[b+1], p)
        if type(n) ~= 'number' then
          redis.call('lpush', KEYS[b+2], p)
          ok, r = false, nil
        elseif n == 1 then
          redis.call('publish', channel, ARGV[5*g-1])
        end
      end
      if ok then
        done[#done+1] = '1'; ended[g] = (ended[g] or 0) + 1
        local final = kind == 'A' or kind == 'F' or kind == 'D'
        local state = ({A = 'done', F = 'dropped', D = 'dead', R = 'retrying', S = 'queued', Q = 'queued'})[kind]
        local now = serverNow()
        if keep > 0 or tracked == '1' then
          record(prefix, id, ARGV[5*g-1], state, final, attempts, pool, err, result, keep, batch, now)
        end
        if final and tracked == '1' then
          settle(prefix, prefix .. 'job:' .. id .. ':next', kind == 'A', 'job ' .. id .. ' ' .. state, now, channel)
        end
        if batch ~= '' then
          if kind ~= 'A' and kind ~= 'S' and kind ~= 'Q' then pc('hincrby', prefix .. 'batch:' .. batch, 'failed', 1) end
          if kind == 'A' then batchCount(prefix, batch, -1, now, channel)
          elseif final then batchCount(prefix, batch, WK - 1, now, channel) end
        end
        if final and ukey ~= '' then redis.call('del', ukey) end
      else
        done[#done+1] = r and '0' or 'e'
      end
      a = a + 15
    else
      local p, score, member = ARGV[a+2], ARGV[a+3], ARGV[a+4]
      local set = KEYS[3]
      if op == 'R' then set = KEYS[1] elseif op == 'D' then set = KEYS[2] end
      local r = endHold(b, p)
      if r and r > 0 then
        if type(redis.pcall('zadd', set, score, member)) ~= 'number' then
          redis.call('lpush', KEYS[b+2], p)
          done[#done+1] = 'e'
        else
          done[#done+1] = '1'; ended[g] = (ended[g] or 0) + 1
        end
      else
        done[#done+1] = r and '0' or 'e'
      end
      a = a + 5
    end
  end
end

-- Release the concurrency slots of limited queues, waking pools that waited for one.
for g, n in pairs(ended) do
  if ARGV[5*g] == '1' then
    local b = 3 + 7 * (g - 1)
    local held = redis.pcall('decrby', KEYS[b+4], n)
    if type(held) == 'number' and held < 0 then redis.call('set', KEYS[b+4], 0) end
    local left = redis.pcall('hincrby', KEYS[b+5], pool, -n)
    if type(left) == 'number' and left <= 0 then redis.call('hdel', KEYS[b+5], pool) end
    local max = intOf(KEYS[b+6]) or 0
    if max > 0 and type(held) == 'number' and held + n >= max then redis.call('publish', channel, ARGV[5*g-1]) end
  end
end

local status, counts, jobs = {}, {}, {}
local pausedKeys = {}
for g = 1, G do
  status[g], counts[g] = -3, 0
  if tonumber(ARGV[5*g+1]) >= 0 then pausedKeys[#pausedKeys+1] = KEYS[7*g-1] end
end
if #pausedKeys == 0 then return {table.concat(done), status, counts, jobs} end
-- One EXISTS over every candidate's paused flag: most fetches find none paused.
local anyPaused = redis.call('exists', unpack(pausedKeys)) > 0
local nowMs

-- take moves up to want jobs of group g; it returns the number moved and the group's status.
local function take(g, want)
  local b, c = 3 + 7 * (g - 1), 5 * g - 1
  local n = want
  if ARGV[c+1] == '1' then
    local max, held = intOf(KEYS[b+6]), intOf(KEYS[b+4])
    if not (max and held and isType(KEYS[b+5], 'hash')) then return 0, -5 end
    if max > 0 and max - held < n then n = max - held end
    if n <= 0 then return 0, -2 end
  end
  local limit, period = tonumber(ARGV[c+3]), tonumber(ARGV[c+4])
  local tat, interval
  if limit > 0 then
    tat = intOf(KEYS[b+7])
    if not tat then return 0, -5 end
    if not nowMs then
      local t = redis.call('time')
      nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    interval = period / limit
    if tat < nowMs then tat = nowMs end
    local allowed = math.floor((nowMs + period - tat) / interval)
    if allowed < n then n = allowed end
    if n <= 0 then return 0, -4 end
  end
  local vals
  if n == 1 then
    local v = redis.pcall('rpoplpush', KEYS[b+1], KEYS[b+2])
    if type(v) == 'table' then return 0, -5 end
    vals = {}
    if v then vals[1] = v end
  else
    vals = redis.pcall('rpop', KEYS[b+1], n)
    if type(vals) == 'table' and vals.err then
      if string.find(vals.err, 'WRONGTYPE', 1, true) then return 0, -5 end
      -- A server older than 6.2 has no RPOP count: move them one by one.
      vals = {}
      for i = 1, n do
        local v = redis.pcall('rpoplpush', KEYS[b+1], KEYS[b+2])
        if type(v) == 'table' then return #vals, -5 end
        if not v then break end
        vals[#vals+1] = v
      end
    elseif not vals then
      vals = {}
    elseif #vals > 0 then
      local r = redis.pcall('lpush', KEYS[b+2], unpack(vals, 1, math.min(#vals, 1000)))
      if type(r) == 'table' then
        -- The in-progress key holds the wrong type: put the jobs back where they were.
        for i = #vals, 1, -1 do redis.call('rpush', KEYS[b+1], vals[i]) end
        return 0, -5
      end
      for i = 1001, #vals, 1000 do redis.call('lpush', KEYS[b+2], unpack(vals, i, math.min(#vals, i + 999))) end
    end
  end
  local got = #vals
  if got > 0 then
    if ARGV[c+1] == '1' then
      redis.call('incrby', KEYS[b+4], got)
      redis.call('hincrby', KEYS[b+5], pool, got)
    end
    if tat then redis.call('set', KEYS[b+7], tostring(tat + got * interval), 'PX', math.ceil(period * 2)) end
    for i = 1, got do jobs[#jobs+1] = vals[i] end
  end
  if got < n then return got, 0 end
  return got, 1
end

-- Candidates keep their order in jobs: a second pass, for what the first could not get, appends
-- to a group's jobs only when it is the last group that gave any.
local carry = 0
local order = {}
for g = 1, G do
  local share = tonumber(ARGV[5*g+1])
  if share >= 0 and share + carry > 0 then
    if anyPaused and redis.call('exists', KEYS[7*g-1]) == 1 then
      status[g] = -1
      carry = carry + share
    else
      local got, st = take(g, share + carry)
      carry = share + carry - got
      status[g], counts[g] = st, got
      if got > 0 then order[#order+1] = g end
    end
  end
end
if carry > 0 and #order > 0 and status[order[#order]] == 1 then
  local g = order[#order]
  local got, st = take(g, carry)
  status[g], counts[g] = st, counts[g] + got
end
return {table.concat(done), status, counts, jobs}
`)

// heartbeatScript records that this pool is alive (in Redis server time), squares the pool's
// concurrency counters with what it actually holds for the job names given, reports the other pools
// whose heartbeat is older than ARGV[8] seconds or missing, and the earliest heartbeat among the
// others that are late (older than ARGV[10] seconds), so the caller can look again when that one
// would be dead, and looks for waiting jobs (luaScan), so an idle pool needs no other command. It
// reads other pools' heartbeat hashes by name (ARGV[9] is their key prefix); with a hash-tagged
// namespace they share the slot of KEYS[1].
//
//	KEYS[1] worker_pools set; KEYS[2] this pool's heartbeat hash
//	KEYS[3..e] (e = ARGV[13]) scheduled set, retry set, this pool's queues (see luaScan)
//	KEYS[e+4i-3..e+4i], one group per job name to square: in-progress list, lock counter, lock_info
//	hash, max_concurrency
//	ARGV[1] pool ID; ARGV[2] started_at; ARGV[3] job_names; ARGV[4] concurrency; ARGV[5] worker_ids;
//	ARGV[6] host; ARGV[7] pid; ARGV[8] dead-after seconds; ARGV[9] heartbeat key prefix;
//	ARGV[10] late-after seconds; ARGV[11] "1" to recompute every lock of the groups from its
//	lock_info (else only the locks of limited queues and those whose lock_info entry of this pool
//	changed); ARGV[12] the jobs-key prefix (to name the job of a lock_info key); ARGV[13] e;
//	ARGV[14] periodic_jobs ("" when none); ARGV[14+i] the MaxConcurrency of group i (also written back
//	if its key was overwritten)
//
// Returns {now, earliest late heartbeat (0: none), scan reply, stale pool ID 1, its job_names (or
// ""), ...}; a pool with a lock_info entry but no registration is reported as stale with that one job
// name.
var heartbeatScript = redis.NewScript(-1, luaKeyChecks+luaScan+`
local pool = ARGV[1]
local now = tonumber(redis.call('time')[1])
local unregistered = {}
local fields = {'heartbeat_at', now, 'started_at', ARGV[2], 'job_names', ARGV[3], 'concurrency', ARGV[4],
  'worker_ids', ARGV[5], 'host', ARGV[6], 'pid', ARGV[7]}
if ARGV[14] ~= '' then
  fields[#fields + 1] = 'periodic_jobs'
  fields[#fields + 1] = ARGV[14]
end
redis.call('hset', KEYS[2], unpack(fields))
local pools, registered = redis.call('smembers', KEYS[1]), {}
for _, id in ipairs(pools) do registered[id] = true end
if not registered[pool] then
  redis.call('sadd', KEYS[1], pool)
  registered[pool] = true
end
local e = tonumber(ARGV[13])
for k = e + 1, #KEYS, 4 do
  -- Derived counters of the wrong type are repaired: other pools re-add their lock_info entries
  -- with their own heartbeats.
  local repaired = false
  -- Only strings are ever rewritten: a key of another type may be the queue of a colliding job name.
  local max = tonumber(ARGV[14 + (k - e - 1) / 4 + 1])
  local infoType = redis.call('type', KEYS[k+2]).ok
  if infoType == 'string' then redis.call('del', KEYS[k+2]); repaired = true end
  local lockType = redis.call('type', KEYS[k+1]).ok
  local lockOK = lockType == 'none' or lockType == 'string'
  if not intOf(KEYS[k+1]) then repaired = true end
  local maxType = redis.call('type', KEYS[k+3]).ok
  if not intOf(KEYS[k+3]) and maxType == 'string' then redis.call('set', KEYS[k+3], max) end
  if max > 0 then repaired = true end
  if infoType ~= 'none' and infoType ~= 'hash' and infoType ~= 'string' then lockOK = false end
  if lockOK then
    local held = redis.pcall('llen', KEYS[k])
    -- Only a limited queue's jobs are counted (the exchange counts no others).
    if type(held) ~= 'number' or max == 0 then held = 0 end
    local had = tonumber(redis.call('hget', KEYS[k+2], pool) or 0) or 0
    if held ~= had then
      if held > 0 then redis.call('hset', KEYS[k+2], pool, held) else redis.call('hdel', KEYS[k+2], pool) end
    end
    if held ~= had or repaired or ARGV[11] == '1' then
      -- lock is the sum of the entries; an entry of a pool that is not registered is reported as a
      -- stale pool, whose reaping puts its in-progress jobs back and drops the entry.
      local sum = 0
      local entries = redis.call('hgetall', KEYS[k+2])
      for j = 1, #entries, 2 do
        sum = sum + (tonumber(entries[j+1]) or 0)
        if not registered[entries[j]] then
          unregistered[#unregistered + 1] = entries[j]
          unregistered[#unregistered + 1] = string.sub(KEYS[k+2], #ARGV[12] + 1, -11)
        end
      end
      redis.call('set', KEYS[k+1], sum)
    end
  end
end
local out = {now, 0, scan(3, e, now)}
for j = 1, #unregistered do out[#out + 1] = unregistered[j] end
local deadAfter, lateAfter = tonumber(ARGV[8]), tonumber(ARGV[10])
for _, id in ipairs(pools) do
  if id ~= pool then
    local hb = redis.pcall('hmget', ARGV[9] .. id, 'heartbeat_at', 'job_names')
    if hb.err then hb = {false, false} end
    local at = tonumber(hb[1] or '')
    if not at or now - at > deadAfter then
      out[#out + 1] = id
      out[#out + 1] = hb[2] or ''
    elseif now - at > lateAfter and (out[2] == 0 or at < out[2]) then
      out[2] = at
    end
  end
end
return out
`)

// reapScript returns a dead pool's in-progress jobs to the fetch end of their queues (oldest first, no
// retry counted) and releases what it held of each concurrency lock, unless the pool sent a heartbeat
// after all. Only one of several reapers racing for the same pool does anything.
//
//	KEYS[1] worker_pools set; KEYS[2] the dead pool's heartbeat hash
//	KEYS[4i-1..4i+2], one group per job name: jobs list, the pool's in-progress list, lock, lock_info
//	ARGV[1] dead pool ID; ARGV[2] dead-after seconds (-1: reap whatever the heartbeat says, as a
//	stopping pool does for itself); ARGV[3] wake-up channel; ARGV[3+i] job name i
//
// Returns the number of jobs requeued, or -1 when the pool turned out to be alive.
var reapScript = redis.NewScript(-1, luaKeyChecks+`
local now = tonumber(redis.call('time')[1])
local at = redis.pcall('hget', KEYS[2], 'heartbeat_at')
if type(at) ~= 'string' then at = nil else at = tonumber(at) end
if at and now - at <= tonumber(ARGV[2]) then return -1 end
local moved = 0
for i = 1, (#KEYS - 2) / 4 do
  local b = 2 + (i - 1) * 4
  local c = 0
  -- A queue or in-progress key of the wrong type is left alone (nothing can move safely).
  if isType(KEYS[b+1], 'list') and isType(KEYS[b+2], 'list') then
    while true do
      local v = redis.call('lpop', KEYS[b+2])
      if not v then break end
      redis.call('rpush', KEYS[b+1], v)
      c = c + 1
    end
  end
  if isType(KEYS[b+4], 'hash') then
    local held = tonumber(redis.call('hget', KEYS[b+4], ARGV[1]) or 0) or 0
    redis.call('hdel', KEYS[b+4], ARGV[1])
    if held ~= 0 then
      local left = redis.pcall('decrby', KEYS[b+3], held)
      if type(left) == 'number' and left < 0 then redis.call('set', KEYS[b+3], 0) end
    end
  end
  if c > 0 then
    redis.call('publish', ARGV[3], ARGV[3+i])
    moved = moved + c
  end
end
redis.call('del', KEYS[2])
redis.call('srem', KEYS[1], ARGV[1])
return moved
`)

// dueScript lists members of sorted sets whose score is at or before the server's clock, and when
// the next one after those is due.
//
//	KEYS[1..n] sorted sets (scheduled, retry)
//	ARGV[1] at most this many members of each set
//
// Returns {now, {members of KEYS[1]}, {members of KEYS[2]}, ..., seconds until the earliest member
// not yet due is due, rounded up (-1: none; at most 3600)}.
var dueScript = redis.NewScript(-1, `
local now = redis.call('time')[1]
local out = {tonumber(now)}
local nextIn = -1
for i = 1, #KEYS do
  local m = redis.pcall('zrangebyscore', KEYS[i], '-inf', now, 'LIMIT', 0, ARGV[1])
  if m.err then m = {} end
  out[i + 1] = m
  local n = redis.pcall('zrangebyscore', KEYS[i], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local at = type(n) == 'table' and tonumber(n[2])
  if at then
    local d = math.ceil(at - tonumber(now))
    if d ~= d or d < 1 then d = 1 elseif d > 3600 then d = 3600 end
    if nextIn < 0 or d < nextIn then nextIn = d end
  end
end
out[#KEYS + 2] = nextIn
return out
`)

// enqueueDueScript moves members of a sorted set onto the back of the queues named for them, each at
// most once: a member that another pool moved first is skipped.
//
//	KEYS[1] the sorted set; KEYS[1+i] the queue list for member i
//	ARGV[1] wake-up channel; ARGV[2i], ARGV[2i+1] member i and its job name
//
// Returns the number of members moved.
var enqueueDueScript = redis.NewScript(-1, luaKeyChecks+`
local moved = 0
for i = 2, #KEYS do
  local m, name = ARGV[2*(i-1)], ARGV[2*(i-1)+1]
  -- A queue key of the wrong type leaves its member in the set rather than lose it.
  if isType(KEYS[i], 'list') and redis.call('zrem', KEYS[1], m) == 1 then
    if redis.call('lpush', KEYS[i], m) == 1 then redis.call('publish', ARGV[1], name) end
    moved = moved + 1
  end
end
return moved
`)

// zsetMoveScript moves one member from a sorted set to another sorted set under a new payload, if it is
// still there: a payload that cannot be decoded goes to dead with its reason this way.
//
//	KEYS[1] source set; KEYS[2] destination set
//	ARGV[1] member; ARGV[2] destination score; ARGV[3] destination payload
//
// Returns 1 when moved, 0 when the member was gone.
var zsetMoveScript = redis.NewScript(2, luaKeyChecks+`
if isType(KEYS[2], 'zset') and redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  redis.call('zadd', KEYS[2], ARGV[2], ARGV[3])
  return 1
end
return 0
`)

// enqueueUniqueScript enqueues a job (onto a queue, or into the scheduled set when ARGV[3] is a score)
// unless its unique lock is held. A duplicate refreshes the lock and, for ByKey jobs, replaces the
// stored job so the single run uses the latest args.
//
//	KEYS[1] jobs list or scheduled set; KEYS[2] unique lock; KEYS[3] known_jobs set
//	ARGV[1] job payload; ARGV[2] lock value ("1", or the job payload for ByKey); ARGV[3] run-at score
//	or ""; ARGV[4] job name; ARGV[5] wake-up channel; ARGV[6] lock TTL in seconds; ARGV[7] due channel
//
// Returns "ok" when enqueued, "dup" otherwise.
var enqueueUniqueScript = redis.NewScript(3, `
redis.call('sadd', KEYS[3], ARGV[4])
if redis.call('set', KEYS[2], ARGV[2], 'NX', 'EX', ARGV[6]) then
  if ARGV[3] ~= '' then
    redis.call('zadd', KEYS[1], ARGV[3], ARGV[1])
    redis.call('publish', ARGV[7], ARGV[3])
  elseif redis.call('lpush', KEYS[1], ARGV[1]) == 1 then
    redis.call('publish', ARGV[5], ARGV[4])
  end
  return 'ok'
end
redis.call('set', KEYS[2], ARGV[2], 'EX', ARGV[6])
return 'dup'
`)

// sweepScript puts back, at the fetch end of its queue, every entry of this pool's in-progress lists
// that the pool does not hold: a fetch whose reply was lost (Redis restarted, a connection cut, a
// failover) leaves such entries, which no worker will ever run. The caller runs it between fetches,
// passing every payload it holds until its outcome is written.
//
//	KEYS[4i-3..4i], one group per job name: in-progress list, jobs list, lock, lock_info
//	ARGV[1] pool ID; ARGV[2] wake-up channel; then per job name: its name, the number c of payloads
//	the pool holds for it, and those c payloads
//
// Returns the number of entries put back.
var sweepScript = redis.NewScript(-1, luaKeyChecks+`
local pool, channel = ARGV[1], ARGV[2]
local a = 3
local moved = 0
for i = 1, #KEYS / 4 do
  local b = (i - 1) * 4
  local name, c = ARGV[a], tonumber(ARGV[a+1])
  local held = {}
  for j = a + 2, a + 1 + c do held[ARGV[j]] = (held[ARGV[j]] or 0) + 1 end
  a = a + 2 + c
  if isType(KEYS[b+1], 'list') and isType(KEYS[b+2], 'list') and redis.call('llen', KEYS[b+1]) > c then
    local n = 0
    for _, m in ipairs(redis.call('lrange', KEYS[b+1], 0, -1)) do
      if (held[m] or 0) > 0 then
        held[m] = held[m] - 1
      else
        redis.call('lrem', KEYS[b+1], 1, m)
        redis.call('rpush', KEYS[b+2], m)
        n = n + 1
      end
    end
    if n > 0 then
      local left = redis.pcall('hincrby', KEYS[b+4], pool, -n)
      if type(left) == 'number' and left <= 0 then redis.call('hdel', KEYS[b+4], pool) end
      local l = redis.pcall('decrby', KEYS[b+3], n)
      if type(l) == 'number' and l < 0 then redis.call('set', KEYS[b+3], 0) end
      redis.call('publish', channel, name)
      moved = moved + n
    end
  end
end
return moved
`)

// enqueueBatchScript queues many payloads at once, after checking that every queue key is a list (or
// missing), so that it either queues them all or none.
//
//	KEYS[1] known_jobs set; KEYS[1+i] the queue of job name i
//	ARGV[1] wake-up channel; ARGV[2i], ARGV[2i+1] job name i and how many payloads it has;
//	then the payloads, job name by job name
//
// Returns the number of payloads queued, or an error naming a queue key of the wrong type.
var enqueueBatchScript = redis.NewScript(-1, luaKeyChecks+`
for i = 2, #KEYS do
  if not isType(KEYS[i], 'list') then
    return redis.error_reply('WRONGTYPE the queue key ' .. KEYS[i] .. ' holds another type; nothing was queued')
  end
end
local n = #KEYS - 1
local at = 2 + 2 * n
local total = 0
for i = 1, n do
  local name, count = ARGV[2*i], tonumber(ARGV[2*i+1])
  redis.call('sadd', KEYS[1], name)
  local done = 0
  while done < count do
    local chunk = math.min(count - done, 1000)
    redis.call('lpush', KEYS[1+i], unpack(ARGV, at + done, at + done + chunk - 1))
    done = done + chunk
  end
  at = at + count
  total = total + count
  redis.call('publish', ARGV[1], name)
end
return total
`)

// claimUniqueScript releases the unique locks of jobs a worker is starting, returning what each held
// ("1", or the latest job payload of a ByKey job, or nil when the lock had expired). With ARGV[1]
// "keep" it only reads them (UniqueUntilDone: the lock goes when the job ends).
//
//	KEYS[1..n] unique locks
var claimUniqueScript = redis.NewScript(-1, `
local out = {}
for i = 1, #KEYS do
  local v = redis.pcall('get', KEYS[i])
  if type(v) == 'table' then v = false end
  out[i] = v
  if ARGV[1] ~= 'keep' then redis.call('del', KEYS[i]) end
end
return out
`)

// schedulePeriodicScript adds periodic jobs to the scheduled set for run-at times still in the future
// on the server's clock, so a job already moved to its queue is never added a second time. Every pool
// writes the same bytes for the same tick, so ZADD makes the add idempotent across pools.
//
//	KEYS[1] scheduled set; KEYS[2] last_periodic_enqueue
//	ARGV[2i-1], ARGV[2i]: run-at score and payload of job i
//
// Returns the number of jobs newly added.
var schedulePeriodicScript = redis.NewScript(2, `
local now = tonumber(redis.call('time')[1])
local added = 0
for i = 1, #ARGV, 2 do
  if tonumber(ARGV[i]) > now then
    added = added + redis.call('zadd', KEYS[1], ARGV[i], ARGV[i+1])
  end
end
redis.call('set', KEYS[2], now)
return added
`)

// luaScan defines scan(s, e, now), which answers "what is waiting?" for KEYS[s] and KEYS[s+1] (the
// scheduled and retry sets) and the queues KEYS[s+2..e]. An idle namespace costs one EXISTS (an
// empty set or list does not exist), whatever the number of queues; TIME is read only when needed.
//
// It returns {due, i...}: due is -1 when both sets are empty, else the seconds until their earliest
// member is due (0: due now; at most 3600, a look comes sooner anyway); each i (1-based from
// KEYS[s+2]) is a queue that holds jobs.
const luaScan = `
local function scan(s, e, now)
  local out = {-1}
  local total = 0
  for i = s, e, 1000 do total = total + redis.call('exists', unpack(KEYS, i, math.min(i + 999, e))) end
  if total == 0 then return out end
  local sets = redis.call('exists', KEYS[s], KEYS[s + 1])
  if sets > 0 then
    now = now or tonumber(redis.call('time')[1])
    for i = s, s + 1 do
      local m = redis.pcall('zrange', KEYS[i], 0, 0, 'WITHSCORES')
      local at = type(m) == 'table' and tonumber(m[2])
      if at then
        local d = at - now
        -- Scores are anyone's to write: NaN, negative and huge ones are clamped.
        if d ~= d or d < 0 then d = 0 elseif d > 3600 then d = 3600 end
        d = math.floor(d)
        if out[1] < 0 or d < out[1] then out[1] = d end
      end
    end
  end
  local lists = total - sets
  for i = s + 2, e do
    if lists <= 0 then break end
    local n = redis.pcall('llen', KEYS[i])
    if type(n) ~= 'number' then
      lists = lists - 1 -- a key of another type exists too: counted off, not reported
    elseif n > 0 then
      out[#out + 1] = i - s - 1
      lists = lists - 1
    end
  end
  return out
end
`

// pollScript runs scan over KEYS: the scheduled set, the retry set, then the pool's queues.
var pollScript = redis.NewScript(-1, luaScan+`
return scan(1, #KEYS)
`)

// trimDeadScript removes the oldest members of the dead set beyond a size and older than an age, at
// most ARGV[3] per call so one call never holds Redis long: O(log n + removed).
//
//	KEYS[1] dead set; KEYS[2] dead_trimmed counter
//	ARGV[1] most members to keep (0: no limit); ARGV[2] oldest died-at to keep, epoch s (0: no limit);
//	ARGV[3] most members to remove in this call
//
// Returns the number removed.
var trimDeadScript = redis.NewScript(2, `
local budget = tonumber(ARGV[3])
local removed = 0
local minScore = tonumber(ARGV[2])
if minScore > 0 then
  local old = redis.call('zcount', KEYS[1], '-inf', '(' .. minScore)
  if old > budget then old = budget end
  if old > 0 then
    removed = removed + redis.call('zremrangebyrank', KEYS[1], 0, old - 1)
    budget = budget - removed
  end
end
local keep = tonumber(ARGV[1])
if keep > 0 and budget > 0 then
  local excess = redis.call('zcard', KEYS[1]) - keep
  if excess > 0 then
    if excess > budget then excess = budget end
    removed = removed + redis.call('zremrangebyrank', KEYS[1], 0, excess - 1)
  end
end
if removed > 0 then redis.call('incrby', KEYS[2], removed) end
return removed
`)

// trimBatchesScript removes from the batch index the batches whose status has expired: those listed
// in batches_expiry as due by the server's clock, then, in a walk of at most ARGV[1] entries of the
// index from rank ARGV[2], any entry whose batch hash is gone by another way (completed before
// batches_expiry existed, deleted by hand). O(log n + ARGV[1]) a call, whatever the index holds.
//
//	KEYS[1] batches index; KEYS[2] batches_expiry
//	ARGV[1] most entries to remove, and to check, in this call; ARGV[2] the rank to walk the index
//	from; ARGV[3] the prefix of batch keys
//
// Returns {entries removed, the rank to walk from next time (0 once the walk reached the end)}.
var trimBatchesScript = redis.NewScript(2, `
local now = tonumber(redis.call('time')[1])
local budget = tonumber(ARGV[1])
local removed = 0
local due = redis.call('zrangebyscore', KEYS[2], '-inf', now, 'LIMIT', 0, budget)
if #due > 0 then
  redis.call('zrem', KEYS[1], unpack(due))
  removed = redis.call('zrem', KEYS[2], unpack(due))
end
local start = tonumber(ARGV[2])
local ids = redis.call('zrange', KEYS[1], start, start + budget - 1)
local gone = {}
for _, id in ipairs(ids) do
  if redis.call('exists', ARGV[3] .. id) == 0 then gone[#gone + 1] = id end
end
if #gone > 0 then
  removed = removed + redis.call('zrem', KEYS[1], unpack(gone))
  redis.call('zrem', KEYS[2], unpack(gone))
end
local nextStart = start + #ids - #gone
if #ids < budget then nextStart = 0 end
return {removed, nextStart}
`)

// Backend is how the package reaches Redis. NewEnqueuer, NewWorkerPool and NewClient use a redigo
// *redis.Pool (see PoolBackend); the ...WithBackend constructors take any Backend, so that an adapter
// for another client (Redis Cluster, Sentinel) can sit behind the same code. Implementations must be
// safe for concurrent use.
type Backend interface {
	// Conn returns a connection for a command or a pipeline of commands (redigo's Send, Flush,
	// Receive and Do("") semantics, MULTI/EXEC included) and for EVALSHA/EVAL. Its commands run on
	// one server connection, in order; WAIT relies on it, so a Conn that cannot promise it for a
	// WAIT (writes spread over several Cluster masters) must return an error for the WAIT. Replies follow
	// redigo's types: int64, []byte, []interface{}, nil, redis.Error. The caller closes it.
	Conn(ctx context.Context) (redis.Conn, error)

	// Subscribe listens on the given pub/sub channels until ctx is done or the subscription fails,
	// calling subscribed once it listens (again after each reconnection, if it reconnects by itself)
	// and message for every message. It returns ctx's error or the failure.
	Subscribe(ctx context.Context, channels []string, subscribed func(), message func(channel string, data []byte)) error
}

// PoolBackend returns the Backend of a redigo pool: the one the gocraft-compatible constructors use.
func PoolBackend(pool *redis.Pool) Backend { return &poolBackend{pool: pool} }

type poolBackend struct {
	pool *redis.Pool
	// pingEvery keeps a subscription alive on connections dialled with a read timeout: it is learnt
	// from the first subscription that timed out while idle (half its quiet time). 0: no pings.
	pingEvery atomic.Int64
}

func (b *poolBackend) Conn(ctx context.Context) (redis.Conn, error) { return b.pool.GetContext(ctx) }

// dial opens a connection of the pool's own outside the pool, for a subscription: closing it from
// another goroutine ends a blocked receive at once, so no goroutine has to wait on each message.
func (b *poolBackend) dial(ctx context.Context) (redis.Conn, error) {
	switch {
	case b.pool.DialContext != nil:
		return b.pool.DialContext(ctx)
	case b.pool.Dial != nil:
		return b.pool.Dial()
	}
	return b.pool.GetContext(ctx)
}

func (b *poolBackend) Subscribe(ctx context.Context, channels []string, subscribed func(), message func(string, []byte)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := b.dial(ctx)
	if err != nil {
		return err
	}
	psc := redis.PubSubConn{Conn: c}
	defer psc.Close()
	args := make([]interface{}, len(channels))
	for i, ch := range channels {
		args[i] = ch
	}
	if err := psc.Subscribe(args...); err != nil {
		return err
	}
	pingerDone := make(chan struct{})
	defer func() { cancel(); <-pingerDone }()
	go func() {
		// redigo allows one goroutine sending while another receives: the pings never race the
		// receiver.
		defer close(pingerDone)
		defer c.Close() // ends the receive below once ctx is done
		every := time.Duration(b.pingEvery.Load())
		if every <= 0 {
			<-ctx.Done()
			return
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if psc.Ping("") != nil {
					return
				}
			}
		}
	}()
	confirmed := 0
	quietSince := time.Now()
	for {
		// Only this goroutine receives: when ctx is done, the pinger closes the connection.
		switch v := psc.Receive().(type) {
		case redis.Message:
			quietSince = time.Now()
			message(v.Channel, v.Data)
		case redis.Subscription:
			if confirmed++; confirmed == len(channels) {
				subscribed()
			}
		case redis.Pong:
			quietSince = time.Now()
		case error:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var ne net.Error
			if errors.As(v, &ne) && ne.Timeout() {
				// An idle subscription met the connection's read timeout (or, pinging already, a
				// pong came late on a busy machine): subscribe again, pinging often enough from now
				// on. A server that is really gone fails the new subscription with its own error.
				every := int64(max(time.Since(quietSince)/3, 50*time.Millisecond))
				if cur := b.pingEvery.Load(); cur == 0 || every < cur {
					b.pingEvery.Store(every)
				}
				return errSubscriptionTimedOut
			}
			return v
		}
	}
}

// errSubscriptionTimedOut reports that an idle subscription hit the connection's read timeout; the
// next one pings often enough to stay alive.
var errSubscriptionTimedOut = errors.New("work: the idle wake-up subscription hit the connection's read timeout; subscribing again, pinging more often")

// store is the package's Redis layer: one method per state transition or read, each one round trip
// unless it says otherwise.
type store struct {
	backend Backend
	ks      keyspace
	errs    atomic.Uint64 // failed calls: one may have been applied with its reply lost

	// boxed holds script arguments used on every exchange, converted to interface{} once.
	boxed struct{ retry, dead, scheduled, wake interface{} }
}

func newStore(namespace string, b Backend) *store {
	s := &store{backend: b, ks: newKeyspace(namespace)}
	s.boxed.retry, s.boxed.dead, s.boxed.scheduled = s.ks.retry(), s.ks.dead(), s.ks.scheduled()
	s.boxed.wake = s.ks.wakeChannel()
	return s
}

// replicaWait asks a write to wait until that many replicas acknowledged it (Redis WAIT); zero: no wait.
type replicaWait struct {
	replicas  int
	timeoutMs int64
}

// ErrNotReplicated is returned by an enqueue made with Enqueuer.WaitReplicas when fewer replicas than
// asked acknowledged the write within Enqueuer.WaitTimeout. The job is on the primary, and it may or
// may not survive a failover that happens before it reaches a replica.
var ErrNotReplicated = errors.New("work: the job was not acknowledged by enough replicas")

// doWrite runs a write like do, then, with w set, waits on the same connection for the replicas.
func (s *store) doWrite(ctx context.Context, w replicaWait, fn func(c redis.Conn) error) error {
	return s.do(ctx, func(c redis.Conn) error {
		if err := fn(c); err != nil {
			return err
		}
		if w.replicas <= 0 {
			return nil
		}
		n, err := redis.Int(c.Do("WAIT", w.replicas, w.timeoutMs))
		if err != nil {
			return err
		}
		if n < w.replicas {
			return fmt.Errorf("%w: %d of %d", ErrNotReplicated, n, w.replicas)
		}
		return nil
	})
}

// do runs fn on a connection and closes it.
func (s *store) do(ctx context.Context, fn func(c redis.Conn) error) error {
	c, err := s.backend.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	err = fn(c)
	if err != nil {
		s.errs.Add(1)
	}
	return err
}

// push is one job of an enqueueMany call: its queue, payload and what to send with it, then the
// outcome (the queue's length after the push, or the error of this job's push).
type push struct {
	name     string
	key      string // a keyed job's key: the push runs enqueueKeyedScript
	payload  []byte
	addKnown bool // register the job name in known_jobs too
	publish  bool // send the wake-up with the push (the caller expects the queue to be empty, or nearly)

	n   int64
	err error
}

// enqueueMany pushes payloads onto their queues in one pipelined round trip, registering job names
// and waking idle pools: a push that finds its queue empty and did not send its wake-up along sends
// it in a second round trip, shared by all such pushes. Each push gets its own outcome; an error of
// the connection (or of the replicas' wait) is every push's.
func (s *store) enqueueMany(ctx context.Context, w replicaWait, pushes []*push) {
	err := s.doWrite(ctx, w, func(c redis.Conn) error {
		for _, p := range pushes {
			if p.key != "" {
				// The script registers the name and wakes pools itself.
				enqueueKeyedScript.SendHash(c, s.keyedPushArgs(p)...)
				continue
			}
			if p.addKnown {
				c.Send("SADD", s.ks.knownJobs(), p.name)
			}
			c.Send("LPUSH", s.ks.jobs(p.name), p.payload)
			if p.publish {
				c.Send("PUBLISH", s.ks.wakeChannel(), p.name)
			}
		}
		if err := c.Flush(); err != nil {
			return err
		}
		if len(pushes) > 1 {
			// Calls come concurrently: while Redis answers, let the runnable goroutines (callers
			// making their next jobs) run, so that the reply is more often waiting when this one
			// reads it, which saves parking and waking for it.
			runtime.Gosched()
		}
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		at, late := 0, 0
		var noScript []*push
		for _, p := range pushes {
			if p.addKnown && p.key == "" {
				at++
			}
			if at >= len(r) {
				return fmt.Errorf("work: enqueue: unexpected reply of %d elements", len(r))
			}
			p.n, p.err = redis.Int64(r[at], nil)
			at++
			if p.key != "" {
				if re, ok := p.err.(redis.Error); ok && strings.HasPrefix(string(re), "NOSCRIPT") {
					noScript = append(noScript, p)
				} else {
					p.err = keyedPushError(p.err, p)
				}
				continue
			}
			if p.publish {
				at++
			} else if p.err == nil && p.n == 1 {
				c.Send("PUBLISH", s.ks.wakeChannel(), p.name)
				late++
			}
		}
		if late > 0 {
			// The jobs are queued whatever this reply says: without the wake-up, a pool's next look
			// finds them.
			_, _ = c.Do("")
		}
		for _, p := range noScript {
			// The server did not know the script yet (the first keyed push since it started): Do
			// loads it.
			p.n, p.err = redis.Int64(enqueueKeyedScript.Do(c, s.keyedPushArgs(p)...))
			p.err = keyedPushError(p.err, p)
		}
		return nil
	})
	if err != nil {
		for _, p := range pushes {
			if p.err == nil {
				p.err = err
			}
		}
	}
}

// enqueueBatch pushes payloads onto their queues atomically, in one round trip: every queue key is
// checked first, so the batch is either queued whole or refused; one LPUSH per job name, in the
// given order, and a wake-up per job name.
func (s *store) enqueueBatch(ctx context.Context, w replicaWait, names []string, payloads map[string][]interface{}, addKnown []string) error {
	args := make([]interface{}, 0, 3+2*len(names))
	args = append(args, 1+len(names), s.ks.knownJobs())
	for _, name := range names {
		args = append(args, s.ks.jobs(name))
	}
	args = append(args, s.ks.wakeChannel())
	for _, name := range names {
		args = append(args, name, len(payloads[name]))
	}
	for _, name := range names {
		args = append(args, payloads[name]...)
	}
	return s.doWrite(ctx, w, func(c redis.Conn) error {
		_, err := enqueueBatchScript.Do(c, args...)
		return err
	})
}

// schedule adds a payload to the scheduled set, and tells idle pools when it is due (they would
// otherwise learn it at their next look, seconds later).
func (s *store) schedule(ctx context.Context, w replicaWait, name string, runAt int64, payload []byte, addKnown bool) error {
	return s.doWrite(ctx, w, func(c redis.Conn) error {
		if addKnown {
			c.Send("SADD", s.ks.knownJobs(), name)
		}
		c.Send("ZADD", s.ks.scheduled(), runAt, payload)
		c.Send("PUBLISH", s.ks.dueChannel(), runAt)
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		for _, v := range r {
			if e, ok := v.(redis.Error); ok {
				return e
			}
		}
		return nil
	})
}

// enqueueUnique enqueues (runAt 0) or schedules a unique job. It reports whether the job was added.
func (s *store) enqueueUnique(ctx context.Context, w replicaWait, name, key, uniqueKey string, payload, lockValue []byte, runAt int64, ttl int64) (bool, error) {
	dest, score := s.ks.jobs(name), ""
	if runAt != 0 {
		dest, score = s.ks.scheduled(), strconv.FormatInt(runAt, 10)
	}
	var res string
	err := s.doWrite(ctx, w, func(c redis.Conn) error {
		var err error
		res, err = redis.String(enqueueUniqueScript.Do(c, dest, uniqueKey, s.ks.knownJobs(),
			payload, lockValue, score, name, s.ks.wakeChannel(), ttl, s.ks.dueChannel()))
		return err
	})
	return res == "ok", err
}

// batch runs batchScript for batch id: steps as it takes them, open what opening writes, and the
// payloads of the members to add, by job name in the order of names.
func (s *store) batch(ctx context.Context, w replicaWait, id, steps string, open batchOpen, names []string, payloads map[string][]interface{}) error {
	args := make([]interface{}, 0, 3+len(names)+12+2*len(names))
	args = append(args, 3+len(names), s.ks.batch(id), s.ks.batches(), s.ks.knownJobs())
	for _, name := range names {
		args = append(args, s.ks.jobs(name))
	}
	args = append(args, steps, s.ks.p, s.ks.wakeChannel(), id, open.description, open.keep,
		open.onComplete, open.onCompleteName, open.onSuccess, open.onSuccessName)
	for _, name := range names {
		args = append(args, name, len(payloads[name]))
	}
	for _, name := range names {
		args = append(args, payloads[name]...)
	}
	return s.doWrite(ctx, w, func(c redis.Conn) error {
		_, err := batchScript.Do(c, args...)
		return err
	})
}

// afterJob is a job for enqueueAfter: its ID, name and payload, what becomes of it when a dependency
// dies, how long its record is kept, and what it waits for ("j:<job ID>" or "b:<batch ID>").
type afterJob struct {
	id, name string
	payload  []byte
	policy   string // "dead" or "run"
	keep     int64
	deps     []string
}

// enqueueAfter runs enqueueAfterScript; it returns each job's state (queued, waiting or dead).
func (s *store) enqueueAfter(ctx context.Context, w replicaWait, jobs []afterJob) ([]string, error) {
	args := []interface{}{1, s.ks.knownJobs(), s.ks.p, s.ks.wakeChannel(), len(jobs)}
	for _, j := range jobs {
		args = append(args, j.id, j.name, j.payload, j.keep, j.policy, len(j.deps))
		for _, d := range j.deps {
			args = append(args, d)
		}
	}
	var states []string
	err := s.doWrite(ctx, w, func(c redis.Conn) error {
		var err error
		states, err = redis.Strings(enqueueAfterScript.Do(c, args...))
		return err
	})
	return states, err
}

// batchStatus reads a batch's hash; nil when there is none.
func (s *store) batchStatus(ctx context.Context, id string) (map[string]string, error) {
	var h map[string]string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		h, err = redis.StringMap(c.Do("HGETALL", s.ks.batch(id)))
		return err
	})
	if len(h) == 0 {
		h = nil
	}
	return h, err
}

// batchIDs lists batch IDs from the index, newest first: start..stop (0-based, inclusive), and the
// index's size.
func (s *store) batchIDs(ctx context.Context, start, stop int64) ([]string, int64, error) {
	var ids []string
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		c.Send("ZREVRANGE", s.ks.batches(), start, stop)
		c.Send("ZCARD", s.ks.batches())
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		if ids, err = redis.Strings(r[0], nil); err != nil {
			return err
		}
		n, err = redis.Int64(r[1], nil)
		return err
	})
	return ids, n, err
}

// forgetBatches removes batch IDs (whose status expired) from the index.
func (s *store) forgetBatches(ctx context.Context, ids []string) error {
	return s.do(ctx, func(c redis.Conn) error {
		for _, key := range []string{s.ks.batches(), s.ks.batchesExpiry()} {
			args := []interface{}{key}
			for _, id := range ids {
				args = append(args, id)
			}
			c.Send("ZREM", args...)
		}
		_, err := c.Do("")
		return err
	})
}

// trimBatches drops expired batches from the index (see trimBatchesScript), checking up to budget
// entries from rank walkFrom; it returns how many it removed and the rank to walk from next.
func (s *store) trimBatches(ctx context.Context, budget int, walkFrom int64) (removed, next int64, err error) {
	err = s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Int64s(trimBatchesScript.Do(c, s.ks.batches(), s.ks.batchesExpiry(), budget, walkFrom, s.ks.batch("")))
		if err != nil {
			return err
		}
		if len(r) != 2 {
			return fmt.Errorf("work: trim batches: unexpected reply of %d elements", len(r))
		}
		removed, next = r[0], r[1]
		return nil
	})
	return removed, next, err
}

// jobRecord reads a job's record; nil when there is none.
func (s *store) jobRecord(ctx context.Context, id string) (map[string]string, error) {
	var h map[string]string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		h, err = redis.StringMap(c.Do("HGETALL", s.ks.jobRecord(id)))
		return err
	})
	if len(h) == 0 {
		h = nil
	}
	return h, err
}

// rateLimit is a queue's limit on jobs started per period, across all pools.
type rateLimit struct {
	jobs     uint
	periodMs int64
}

// queueArgs are one of a pool's queues as exchangeScript takes it: its keys, name and settings,
// boxed once per pool run so that a round trip allocates nothing per queue.
type queueArgs struct {
	name    string
	keys    [7]interface{} // jobs, in-progress, paused, lock, lock_info, max_concurrency, rate
	nameArg interface{}
	limited interface{} // "1" when the pool counts the queue against its MaxConcurrency
	rate    [2]interface{}

	statsDay int64  // the day statsKey is for
	statsKey string // the stats hash of statsDay
}

// newQueueArgs encodes a queue of poolID for exchanges.
func (s *store) newQueueArgs(name, poolID string, limited bool, rl rateLimit) *queueArgs {
	q := &queueArgs{name: name, nameArg: name, limited: "0", rate: [2]interface{}{0, 0}}
	q.keys = [7]interface{}{s.ks.jobs(name), s.ks.inProgress(name, poolID), s.ks.paused(name),
		s.ks.lock(name), s.ks.lockInfo(name), s.ks.maxConcurrency(name), s.ks.rate(name)}
	if limited {
		q.limited = "1"
	}
	if rl.jobs > 0 && rl.periodMs > 0 {
		q.rate = [2]interface{}{rl.jobs, rl.periodMs}
	}
	return q
}

// opKind is what a finishOp does with its job.
type opKind uint8

const (
	opAck     opKind = iota // done: removed
	opDrop                  // failed for good with SkipDead: removed
	opRetry                 // to the retry set
	opDead                  // to the dead set
	opSnooze                // to the scheduled set
	opRequeue               // back to the fetch end of its queue, nothing counted
)

// plainAck reports whether o is an acknowledgement with nothing else to update: those go in groups.
func (o *finishOp) plainAck() bool { return (o.kind == opAck || o.kind == opDrop) && o.ext == nil }

// opCodes are exchangeScript's op codes, by opKind.
var opCodes = [...]interface{}{opAck: "A", opDrop: "A", opRetry: "R", opDead: "D", opSnooze: "S", opRequeue: "Q"}

// finishOp is one job's end of hold.
type finishOp struct {
	kind    opKind
	q       *queueArgs
	job     *Job       // the fetched job (its in-progress payload is job.rawArg)
	score   int64      // retry, dead, snooze: the member's score
	payload []byte     // retry, dead, snooze: the member
	ext     *finishExt // workflow state to update with it; nil for most jobs
}

// finishExt is what a job's end changes besides its queue: its batch, its record, the jobs waiting
// for it and its unique lock (exchangeScript's X op).
type finishExt struct {
	id        string
	batch     string
	keep      int64 // seconds to keep the job's record; 0: none unless tracked
	tracked   bool
	uniqueKey string // deleted when the job ends for good ("" none)
	err       string
	result    []byte
	attempts  int64
}

// xCodes are exchangeScript's kinds for its X op, by opKind.
var xCodes = [...]interface{}{opAck: "A", opDrop: "F", opRetry: "R", opDead: "D", opSnooze: "S", opRequeue: "Q"}

// statsAdd is a count to add to a per-minute stats field.
type statsAdd struct {
	key   string
	field string
	count int64
}

// fetchShare asks an exchange for share jobs from a queue.
type fetchShare struct {
	q     *queueArgs
	share int
}

// exchange is one exchangeScript call: built by the pool's loop, which reuses it from call to call.
type exchange struct {
	fetch []fetchShare // candidates, in the order to try them
	ops   []finishOp
	stats []statsAdd

	groups []*queueArgs
	args   []interface{}
	acks   [][]int // per group: the indexes in ops of its acks
	order  []int   // the index in ops of each outcome of the reply, in order

	// The reply.
	done   string        // per op of ops, see exchangeScript
	status []interface{} // per group
	counts []interface{} // per group
	jobs   []interface{} // payloads ([]byte), grouped by group in order
}

func (x *exchange) reset() {
	x.fetch, x.ops, x.stats, x.groups = x.fetch[:0], x.ops[:0], x.stats[:0], x.groups[:0]
	x.done, x.status, x.counts, x.jobs = "", nil, nil, nil
}

// group returns q's group index (1-based), adding it (with no share) if it is not in yet.
func (x *exchange) group(q *queueArgs) int {
	for i, g := range x.groups {
		if g == q {
			return i + 1
		}
	}
	x.groups = append(x.groups, q)
	return len(x.groups)
}

// boxedNoShare marks a queue that takes part in an exchange for its outcomes only.
var boxedNoShare interface{} = -1

// runExchange runs x: it records x.ops and x.stats and fetches what x.fetch asks, filling x's reply.
func (s *store) runExchange(ctx context.Context, poolID interface{}, x *exchange) error {
	for _, f := range x.fetch {
		x.group(f.q)
	}
	cands := len(x.groups)
	// Acks go first, grouped by queue; the other ops after them in their order. x.order records the
	// op of each outcome the reply reports, in that order.
	x.order = x.order[:0]
	for i := range x.ops {
		o := &x.ops[i]
		g := x.group(o.q)
		for len(x.acks) < g {
			x.acks = append(x.acks, nil)
		}
		if o.plainAck() {
			x.acks[g-1] = append(x.acks[g-1], i)
		}
	}
	args := x.args[:0]
	args = append(args, 3+7*len(x.groups), s.boxed.retry, s.boxed.dead, s.boxed.scheduled)
	for _, q := range x.groups {
		args = append(args, q.keys[:]...)
	}
	args = append(args, poolID, s.boxed.wake, len(x.groups))
	for i, q := range x.groups {
		var share interface{} = boxedNoShare
		if i < cands {
			share = x.fetch[i].share
		}
		args = append(args, q.nameArg, q.limited, share, q.rate[0], q.rate[1])
	}
	for g, acks := range x.acks {
		if len(acks) > 0 {
			args = append(args, "A", g+1, len(acks))
			for _, i := range acks {
				args = append(args, x.ops[i].job.rawArg)
			}
			x.order = append(x.order, acks...)
			x.acks[g] = acks[:0]
		}
	}
	for i := range x.ops {
		o := &x.ops[i]
		if !o.plainAck() {
			x.order = append(x.order, i)
		}
		switch {
		case o.plainAck():
		case o.ext != nil:
			e := o.ext
			tracked := "0"
			if e.tracked {
				tracked = "1"
			}
			args = append(args, "X", x.group(o.q), xCodes[o.kind], o.job.rawArg, o.score, o.payload, s.ks.p,
				e.id, e.batch, e.keep, tracked, e.uniqueKey, e.err, e.result, e.attempts)
		case o.kind == opRequeue:
			args = append(args, "Q", x.group(o.q), o.job.rawArg)
		default:
			args = append(args, opCodes[o.kind], x.group(o.q), o.job.rawArg, o.score, o.payload)
		}
	}
	for i := 0; i < len(x.stats); {
		j := i
		for j < len(x.stats) && x.stats[j].key == x.stats[i].key {
			j++
		}
		args = append(args, "T", x.stats[i].key, statsTTLSeconds, j-i)
		for _, st := range x.stats[i:j] {
			args = append(args, st.field, st.count)
		}
		i = j
	}
	x.args = args[:0]
	defer clear(args) // let the payloads go
	return s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Values(exchangeScript.Do(c, args...))
		if err != nil {
			return err
		}
		if len(r) != 4 {
			return fmt.Errorf("work: exchange: unexpected reply of %d elements", len(r))
		}
		done, _ := r[0].([]byte)
		x.done = string(done)
		x.status, _ = r[1].([]interface{})
		x.counts, _ = r[2].([]interface{})
		x.jobs, _ = r[3].([]interface{})
		if len(x.status) != len(x.groups) || len(x.counts) != len(x.groups) {
			return fmt.Errorf("work: exchange: reply for %d queues, asked %d", len(x.status), len(x.groups))
		}
		return nil
	})
}

// sweep puts back the in-progress entries this pool does not hold (see sweepScript); held maps each
// job name to the payloads the pool holds.
func (s *store) sweep(ctx context.Context, poolID string, names []string, held map[string][][]byte) (int64, error) {
	args := make([]interface{}, 0, 1+4*len(names)+2+2*len(names))
	args = append(args, 4*len(names))
	for _, name := range names {
		args = append(args, s.ks.inProgress(name, poolID), s.ks.jobs(name), s.ks.lock(name), s.ks.lockInfo(name))
	}
	args = append(args, poolID, s.ks.wakeChannel())
	for _, name := range names {
		args = append(args, name, len(held[name]))
		for _, p := range held[name] {
			args = append(args, p)
		}
	}
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(sweepScript.Do(c, args...))
		return err
	})
	return n, err
}

// claimUnique releases unique locks (see claimUniqueScript).
func (s *store) claimUnique(ctx context.Context, keys []string, keep bool) ([][]byte, error) {
	args := make([]interface{}, 0, len(keys)+2)
	args = append(args, len(keys))
	for _, k := range keys {
		args = append(args, k)
	}
	if keep {
		args = append(args, "keep")
	}
	var vals [][]byte
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		vals, err = redis.ByteSlices(claimUniqueScript.Do(c, args...))
		return err
	})
	return vals, err
}

// poolHeartbeat is what a pool publishes about itself (compat: the worker_pools:<id> hash).
type poolHeartbeat struct {
	poolID         string
	startedAt      int64
	jobNames       []string // sorted
	maxConcurrency []uint   // of each job name
	concurrency    uint
	workerIDs      []string // sorted
	host           string
	pid            int
	periodicJobs   string // JSON list of {job_name, spec}; "" when none
}

// stalePool is a pool whose heartbeat is older than the dead-after limit.
type stalePool struct {
	id       string
	jobNames []string // nil when its heartbeat hash is gone
}

// heartbeatResult is what a heartbeat learnt about the namespace's pools and waiting jobs.
type heartbeatResult struct {
	now    int64       // the server's clock, epoch seconds
	lateAt int64       // the earliest heartbeat of a late (not yet dead) pool; 0: none
	stale  []stalePool // pools past the dead-after limit
	scan   scanResult
}

// heartbeat writes this pool's heartbeat, squares the concurrency counters of the job names at the
// given indexes of hb.jobNames (every lock recomputed with fullReconcile), reports on the other
// pools and looks for waiting jobs.
func (s *store) heartbeat(ctx context.Context, hb *poolHeartbeat, reconcile []int, deadAfterSeconds, lateAfterSeconds int64, fullReconcile bool) (heartbeatResult, error) {
	scanEnd := 2 + 2 + len(hb.jobNames)
	args := make([]interface{}, 0, 1+scanEnd+4*len(reconcile)+14+len(reconcile))
	args = append(args, scanEnd+4*len(reconcile), s.ks.workerPools(), s.ks.heartbeat(hb.poolID))
	args = s.scanArgs(args, hb.jobNames)
	for _, i := range reconcile {
		name := hb.jobNames[i]
		args = append(args, s.ks.inProgress(name, hb.poolID), s.ks.lock(name), s.ks.lockInfo(name), s.ks.maxConcurrency(name))
	}
	args = append(args, hb.poolID, hb.startedAt, strings.Join(hb.jobNames, ","), hb.concurrency,
		strings.Join(hb.workerIDs, ","), hb.host, hb.pid, deadAfterSeconds, s.ks.heartbeat(""), lateAfterSeconds, fullReconcile,
		s.ks.jobsPrefix(), scanEnd, hb.periodicJobs)
	for _, i := range reconcile {
		args = append(args, hb.maxConcurrency[i])
	}
	var res heartbeatResult
	err := s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Values(heartbeatScript.Do(c, args...))
		if err != nil {
			return err
		}
		if len(r) < 3 || len(r)%2 != 1 {
			return fmt.Errorf("work: heartbeat: unexpected reply of %d elements", len(r))
		}
		if res.now, err = redis.Int64(r[0], nil); err != nil {
			return err
		}
		if res.lateAt, err = redis.Int64(r[1], nil); err != nil {
			return err
		}
		if res.scan, err = parseScan(r[2], hb.jobNames); err != nil {
			return err
		}
		for i := 3; i+1 < len(r); i += 2 {
			id, _ := redis.String(r[i], nil)
			names, _ := redis.String(r[i+1], nil)
			sp := stalePool{id: id}
			if names != "" {
				sp.jobNames = strings.Split(names, ",")
			}
			res.stale = append(res.stale, sp)
		}
		return nil
	})
	return res, err
}

// reap requeues a dead pool's in-progress jobs of the given job names. It returns the number of jobs
// requeued, or -1 when the pool is alive after all.
func (s *store) reap(ctx context.Context, poolID string, jobNames []string, deadAfterSeconds int64) (int64, error) {
	args := make([]interface{}, 0, 3+4*len(jobNames)+3+len(jobNames))
	args = append(args, 2+4*len(jobNames), s.ks.workerPools(), s.ks.heartbeat(poolID))
	for _, name := range jobNames {
		args = append(args, s.ks.jobs(name), s.ks.inProgress(name, poolID), s.ks.lock(name), s.ks.lockInfo(name))
	}
	args = append(args, poolID, deadAfterSeconds, s.ks.wakeChannel())
	for _, name := range jobNames {
		args = append(args, name)
	}
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(reapScript.Do(c, args...))
		return err
	})
	return n, err
}

// knownJobNames returns the members of known_jobs.
func (s *store) knownJobNames(ctx context.Context) ([]string, error) {
	var names []string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		names, err = redis.Strings(c.Do("SMEMBERS", s.ks.knownJobs()))
		return err
	})
	return names, err
}

// due lists up to limit due members of each of the given sets, with the server's clock, and the
// seconds until the next member after those is due (-1: none).
func (s *store) due(ctx context.Context, sets []string, limit int) (int64, [][][]byte, int64, error) {
	args := make([]interface{}, 0, 2+len(sets))
	args = append(args, len(sets))
	for _, k := range sets {
		args = append(args, k)
	}
	args = append(args, limit)
	var now, nextIn int64
	var members [][][]byte
	err := s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Values(dueScript.Do(c, args...))
		if err != nil {
			return err
		}
		if len(r) != len(sets)+2 {
			return fmt.Errorf("work: due: unexpected reply of %d elements", len(r))
		}
		if now, err = redis.Int64(r[0], nil); err != nil {
			return err
		}
		if nextIn, err = redis.Int64(r[len(r)-1], nil); err != nil {
			return err
		}
		for _, v := range r[1 : len(r)-1] {
			m, err := redis.ByteSlices(v, nil)
			if err != nil {
				return err
			}
			members = append(members, m)
		}
		return nil
	})
	return now, members, nextIn, err
}

// enqueueDue moves set members onto the queues of the given names (see enqueueDueScript).
func (s *store) enqueueDue(ctx context.Context, set string, members [][]byte, names []string) (int64, error) {
	args := make([]interface{}, 0, 2+3*len(members)+1)
	args = append(args, 1+len(members), set)
	for _, name := range names {
		args = append(args, s.ks.jobs(name))
	}
	args = append(args, s.ks.wakeChannel())
	for i, m := range members {
		args = append(args, m, names[i])
	}
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(enqueueDueScript.Do(c, args...))
		return err
	})
	return n, err
}

// zsetMove moves one member between sorted sets under a new payload (see zsetMoveScript).
func (s *store) zsetMove(ctx context.Context, from, to string, member []byte, score int64, payload []byte) (bool, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(zsetMoveScript.Do(c, from, to, member, score, payload))
		return err
	})
	return n == 1, err
}

// schedulePeriodic adds periodic jobs (see schedulePeriodicScript).
func (s *store) schedulePeriodic(ctx context.Context, scores []int64, payloads [][]byte) (int64, error) {
	args := make([]interface{}, 0, 2+2*len(scores))
	args = append(args, s.ks.scheduled(), s.ks.lastPeriodicEnqueue())
	for i := range scores {
		args = append(args, scores[i], payloads[i])
	}
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(schedulePeriodicScript.Do(c, args...))
		return err
	})
	return n, err
}

// registerPool writes, at pool start, the names the pool serves and their MaxConcurrency.
func (s *store) registerPool(ctx context.Context, names []string, maxConcurrency []uint) error {
	return s.do(ctx, func(c redis.Conn) error {
		for i, name := range names {
			c.Send("SADD", s.ks.knownJobs(), name)
			c.Send("SET", s.ks.maxConcurrency(name), maxConcurrency[i])
		}
		_, err := c.Do("")
		return err
	})
}

// scanResult is what a look at the namespace found (see luaScan).
type scanResult struct {
	dueIn    int64    // seconds until the earliest scheduled or retry job is due; -1: none
	nonEmpty []string // the queues, of those looked at, that hold jobs
}

// scanArgs appends the keys luaScan reads for the given queues.
func (s *store) scanArgs(args []interface{}, names []string) []interface{} {
	args = append(args, s.ks.scheduled(), s.ks.retry())
	for _, name := range names {
		args = append(args, s.ks.jobs(name))
	}
	return args
}

func parseScan(v interface{}, names []string) (scanResult, error) {
	r, err := redis.Int64s(v, nil)
	if err != nil {
		return scanResult{}, err
	}
	if len(r) == 0 {
		return scanResult{}, fmt.Errorf("work: scan: empty reply")
	}
	res := scanResult{dueIn: r[0]}
	for _, i := range r[1:] {
		if i >= 1 && i <= int64(len(names)) {
			res.nonEmpty = append(res.nonEmpty, names[i-1])
		}
	}
	return res, nil
}

// poll looks for waiting jobs: due scheduled or retry jobs and which of the named queues hold jobs.
func (s *store) poll(ctx context.Context, names []string) (scanResult, error) {
	args := s.scanArgs(append(make([]interface{}, 0, 3+len(names)), 2+len(names)), names)
	var res scanResult
	err := s.do(ctx, func(c redis.Conn) error {
		r, err := pollScript.Do(c, args...)
		if err != nil {
			return err
		}
		res, err = parseScan(r, names)
		return err
	})
	return res, err
}

// observation is the worker:<id> hash of a busy worker.
type observation struct {
	workerID  string
	busy      bool
	jobName   string
	jobID     string
	startedAt int64
	args      []byte
	checkin   string
	checkinAt int64
}

// writeObservations records busy workers (EX 86400) and deletes idle ones, one round trip.
func (s *store) writeObservations(ctx context.Context, obs []observation) error {
	return s.do(ctx, func(c redis.Conn) error {
		for i := range obs {
			o := &obs[i]
			key := s.ks.worker(o.workerID)
			if !o.busy {
				c.Send("DEL", key)
				continue
			}
			c.Send("DEL", key)
			args := []interface{}{key, "job_name", o.jobName, "job_id", o.jobID, "started_at", o.startedAt, "args", o.args}
			if o.checkinAt != 0 {
				args = append(args, "checkin", o.checkin, "checkin_at", o.checkinAt)
			}
			c.Send("HSET", args...)
			c.Send("EXPIRE", key, 86400)
		}
		_, err := c.Do("")
		return err
	})
}

// publishCancel asks every pool to cancel the job with the given ID; it returns how many pools heard.
func (s *store) publishCancel(ctx context.Context, jobID string) (int64, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(c.Do("PUBLISH", s.ks.cancelChannel(), jobID))
		return err
	})
	return n, err
}

// trimDead trims the dead set (see trimDeadScript).
func (s *store) trimDead(ctx context.Context, keep, minDiedAt int64, budget int) (int64, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(trimDeadScript.Do(c, s.ks.dead(), s.ks.deadTrimmed(), keep, minDiedAt, budget))
		return err
	})
	return n, err
}

// deadTrimmedCount reads the dead_trimmed counter.
func (s *store) deadTrimmedCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(c.Do("GET", s.ks.deadTrimmed()))
		if err == redis.ErrNil {
			n, err = 0, nil
		}
		return err
	})
	return n, err
}
