// Enqueues work jobs from Node.js with the node-redis client: a job to run now, a job to run in a
// second, a unique job (twice: the second enqueue finds the first one waiting), and keyed jobs of
// two customers.
//
//   npm ci
//   WORK_REDIS=127.0.0.1:6379 WORK_NS=my_app_namespace node enqueue.js
//
// A Go worker pool of the namespace that handles "send_email", "rebuild_index" and "export_report"
// runs them.
'use strict';

const crypto = require('node:crypto');
const { createClient } = require('redis');

// keyPrefix is the prefix of a namespace's keys: the namespace and ":", unless it ends in ":"
// already; none for the empty namespace.
function keyPrefix(ns) {
  return ns === '' || ns.endsWith(':') ? ns : ns + ':';
}

// newJob returns a job as work's Go code writes it: name, a 24-hex-character id, t (the enqueue time,
// epoch seconds) and args (an object, or null).
function newJob(name, args) {
  return {
    name,
    id: crypto.randomBytes(12).toString('hex'),
    t: Math.floor(Date.now() / 1000),
    args: args === undefined ? null : args,
  };
}

// enqueue pushes a job to run now, adds its name to known_jobs and, when the queue was empty, wakes
// idle pools (a non-empty queue has busy pools, which fetch again as they finish).
async function enqueue(client, ns, name, args) {
  const p = keyPrefix(ns);
  const job = newJob(name, args);
  const [, length] = await client.multi()
    .sAdd(p + 'known_jobs', name)
    .lPush(p + 'jobs:' + name, JSON.stringify(job))
    .exec();
  if (length === 1) {
    await client.publish(p + 'wake', name); // optional: without it, pools find the job at their next look
  }
  return job;
}

// enqueueIn schedules a job to run secondsFromNow seconds from now, and tells idle pools when it is due
// (without that message, they learn of it at their next look).
async function enqueueIn(client, ns, name, secondsFromNow, args) {
  const p = keyPrefix(ns);
  const job = newJob(name, args);
  const runAt = job.t + secondsFromNow;
  await client.multi()
    .sAdd(p + 'known_jobs', name)
    .zAdd(p + 'scheduled', { score: runAt, value: JSON.stringify(job) })
    .publish(p + 'due', String(runAt))
    .exec();
  return { runAt, job };
}

// goJSON encodes a value as Go's json.Encoder does for the unique key: object keys sorted, "<", ">"
// and "&" (and U+2028, U+2029) escaped, and a trailing newline. Strings, integers, booleans, null,
// arrays and objects of them encode the same in both languages.
function goJSON(v) {
  const sorted = (x) => {
    if (Array.isArray(x)) return x.map(sorted);
    if (x !== null && typeof x === 'object') {
      const out = {};
      for (const k of Object.keys(x).sort()) out[k] = sorted(x[k]);
      return out;
    }
    return x;
  };
  return JSON.stringify(sorted(v))
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029') + '\n';
}

// The lock and the push in one step, as the Go enqueuer does: nothing is pushed when the lock is
// held (a duplicate only refreshes its 24-hour expiry), and the lock is never left without its job.
//   KEYS: unique lock, queue, known_jobs; ARGV: job JSON, job name, wake-up channel
const ENQUEUE_UNIQUE = `
redis.call('SADD', KEYS[3], ARGV[2])
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', 86400) then
  if redis.call('LPUSH', KEYS[2], ARGV[1]) == 1 then
    redis.call('PUBLISH', ARGV[3], ARGV[2])
  end
  return 1
end
redis.call('EXPIRE', KEYS[1], 86400)
return 0`;

// enqueueUnique enqueues a job unless one with the same name and args is waiting (in its queue or
// the scheduled set), like EnqueueUnique in Go; it returns null for a duplicate. The lock key is
// <ns>:unique:<name>:<args as Go encodes them>, freed when a worker starts the job.
async function enqueueUnique(client, ns, name, args) {
  const p = keyPrefix(ns);
  const uniqueKey = p + 'unique:' + name + ':' + (args == null ? '' : goJSON(args));
  const job = { ...newJob(name, args), unique: true, unique_key: uniqueKey };
  const pushed = await client.eval(ENQUEUE_UNIQUE, {
    keys: [uniqueKey, p + 'jobs:' + name, p + 'known_jobs'],
    arguments: [JSON.stringify(job), name, p + 'wake'],
  });
  return pushed === 1 ? job : null;
}

// A keyed job's push in one step, as docs/redis-layout.md ("Keyed jobs") lays it out: nothing when the
// key already has as many jobs waiting as its cap (its own override, else the name's KeyMaxWaiting),
// counting its job in the lane if it has one; else that job first moved to the key's queue (found
// among the lane's members of the score the key's lane field holds), so that the key's jobs stay
// in order; then the job onto the key's queue, the key's count into the waiting index, one more in
// meta's count and, when the key had no job waiting in its queue, the key into ready (score 0: the
// pools bring it to the current turn) and a wake-up on the keyed wake-up channel. Returns the key's
// jobs waiting, 0 when refused.
//   KEYS: known_jobs, the key's queue, waiting, meta, conf, ready, lane; ARGV: job JSON, job name,
//   key, wake-up channel
const ENQUEUE_KEYED = `
local s = redis.call('HGET', KEYS[7], ARGV[3])
local queued = redis.call('LLEN', KEYS[2])
local cap = tonumber(redis.call('HGET', KEYS[5], 'm:' .. ARGV[3]) or redis.call('HGET', KEYS[4], 'max_waiting') or '')
if cap and cap > 0 and queued + (s and 1 or 0) >= cap then return 0 end
redis.call('SADD', KEYS[1], ARGV[2])
if s then
  local prefix = ARGV[3] .. '\\n'
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], s, s)) do
    if string.sub(m, 1, #prefix) == prefix then
      redis.call('ZREM', KEYS[6], m)
      redis.call('LPUSH', KEYS[2], string.sub(m, #prefix + 1))
    end
  end
  redis.call('HDEL', KEYS[7], ARGV[3])
end
local n = redis.call('LPUSH', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], n, ARGV[3])
redis.call('HINCRBY', KEYS[4], 'waiting', 1)
if queued == 0 then
  redis.call('ZADD', KEYS[6], 'NX', 0, ARGV[3])
  redis.call('PUBLISH', ARGV[4], ARGV[2])
end
return n`;

// enqueueKeyed enqueues a job of a key (a customer, an account): it waits in the key's queue,
// <ns>:keyed:<name>:{<key>}, and the pools serve the keys with jobs waiting in turn. It returns null
// when the key is at its cap. A key is 1 to 200 bytes of UTF-8 without control characters or braces.
async function enqueueKeyed(client, ns, name, key, args) {
  if (!/^[^\u0000-\u001f\u007f-\u009f{}]+$/.test(key) || Buffer.byteLength(key) > 200) {
    throw new Error('malformed key ' + JSON.stringify(key));
  }
  const p = keyPrefix(ns);
  const kp = p + 'keyed:' + name + ':';
  const job = { ...newJob(name, args), key };
  const n = await client.eval(ENQUEUE_KEYED, {
    keys: [p + 'known_jobs', kp + '{' + key + '}', kp + 'waiting', kp + 'meta', kp + 'conf', kp + 'ready', kp + 'lane'],
    arguments: [JSON.stringify(job), name, key, p + 'wake:keyed'],
  });
  return n > 0 ? job : null;
}

async function main() {
  const addr = process.env.WORK_REDIS || '127.0.0.1:6379';
  const ns = process.env.WORK_NS === undefined ? 'my_app_namespace' : process.env.WORK_NS;
  const client = createClient({ url: 'redis://' + addr });
  client.on('error', (err) => console.error('redis:', err.message));
  await client.connect();
  try {
    const job = await enqueue(client, ns, 'send_email',
      { address: 'node@example.com', subject: 'hello from Node.js', customer_id: 4 });
    console.log('enqueued send_email', job.id);

    const { runAt, job: later } = await enqueueIn(client, ns, 'send_email', 1,
      { address: 'node-later@example.com', subject: 'scheduled from Node.js' });
    console.log('scheduled send_email', later.id, 'at', runAt);

    const args = { index: 'users', note: '<a & b>', shard: 3 };
    const first = await enqueueUnique(client, ns, 'rebuild_index', args);
    console.log('enqueued unique rebuild_index', first && first.id);
    const second = await enqueueUnique(client, ns, 'rebuild_index', args);
    console.log('duplicate rebuild_index', second === null);

    for (const [key, month] of [['acme', '2024-05'], ['acme', '2024-06'], ['globex', '2024-06']]) {
      const keyed = await enqueueKeyed(client, ns, 'export_report', key, { month });
      console.log(keyed ? `enqueued export_report ${keyed.id} for ${key}` : `${key} is at its cap: not enqueued`);
    }
  } finally {
    await client.quit();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
