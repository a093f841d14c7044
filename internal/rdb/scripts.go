package rdb

// The Lua scripts live in lua/, one file per script, and the helpers several of them share in
// lua/lib/. This file carries them into the binary and builds each redis.Script: the helpers a
// script names, then the script itself, sent to Redis as one text.
//
// A script file opens with a header of comment lines: what it does, then two lines the loader reads,
//
//	-- keys: 2                    (how many KEYS it takes, or "varies": the caller passes the count first)
//	-- uses: keychecks, workflow  (helpers from lua/lib, or "none")
//	-- loads: workflow            (optional: helpers the script makes only where it needs them, where
//	                                it writes ${load<Helper>}, e.g. ${loadWorkflow}; see lazyHelper)
//
// then its KEYS, its ARGV and what it returns. A helper file has the same header with "-- defines:"
// (the functions it declares) in place of "-- keys:"; a helper may use others, which come before it.
// Values Go owns are written into the text where it says ${name} (see luaConstants).

import (
	"embed"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

//go:embed lua/*.lua lua/lib/*.lua
var luaFiles embed.FS

// luaConstants are the Go values the scripts use, by the name a script writes as ${name}.
var luaConstants = map[string]string{
	"batchCounterUnit": strconv.Itoa(BatchCounterUnit),
	"legacyDeadAfter":  strconv.Itoa(LegacyDeadAfterSeconds),
	"watchedPeers":     strconv.Itoa(WatchedPeers),
}

// The scripts, in the order of a job's life. Each file's header documents its KEYS, ARGV and reply.
var (
	// enqueueBatchScript queues many payloads at once, all or none: lua/enqueue_batch.lua.
	enqueueBatchScript = loadScript("enqueue_batch")
	// enqueueUniqueScript enqueues a job unless its unique lock is held: lua/enqueue_unique.lua.
	enqueueUniqueScript = loadScript("enqueue_unique")
	// batchScript opens, adds to and closes a batch: lua/batch.lua.
	batchScript = loadScript("batch")
	// enqueueAfterScript enqueues jobs that wait for others: lua/enqueue_after.lua.
	enqueueAfterScript = loadScript("enqueue_after")
	// exchangeScript records finished jobs and fetches new ones, the hot path: lua/exchange.lua.
	exchangeScript = loadScript("exchange")
	// claimUniqueScript releases the unique locks of jobs that start: lua/claim_unique.lua.
	claimUniqueScript = loadScript("claim_unique")
	// sweepScript puts back in-progress entries the pool does not hold: lua/sweep.lua.
	sweepScript = loadScript("sweep")
	// dueScript lists the members of the scheduled and retry sets that are due: lua/due.lua.
	dueScript = loadScript("due")
	// enqueueDueScript moves due members onto their queues: lua/enqueue_due.lua.
	enqueueDueScript = loadScript("enqueue_due")
	// handOffScript pushes a job, or hands it to a pool that waits for it: lua/hand_off.lua.
	handOffScript = loadScript("hand_off")
	// zsetMoveScript moves a member between sorted sets under a new payload: lua/zset_move.lua.
	zsetMoveScript = loadScript("zset_move")
	// schedulePeriodicScript adds periodic jobs to the scheduled set: lua/schedule_periodic.lua.
	schedulePeriodicScript = loadScript("schedule_periodic")
	// pollScript looks for waiting jobs: lua/poll.lua.
	pollScript = loadScript("poll")
	// heartbeatScript records a pool's heartbeat and looks at the others: lua/heartbeat.lua.
	heartbeatScript = loadScript("heartbeat")
	// reapScript puts a dead pool's jobs back on their queues: lua/reap.lua.
	reapScript = loadScript("reap")
	// trimDeadScript trims the dead set: lua/trim_dead.lua.
	trimDeadScript = loadScript("trim_dead")
	// trimBatchesScript drops expired batches from the batch index: lua/trim_batches.lua.
	trimBatchesScript = loadScript("trim_batches")
	// deleteMemberScript deletes a member of a sorted set by hand: lua/delete_member.lua.
	deleteMemberScript = loadScript("delete_member")
	// deleteListMemberScript deletes a job from a queue by hand: lua/delete_list_member.lua.
	deleteListMemberScript = loadScript("delete_list_member")
	// requeueMembersScript moves members of a sorted set onto their queues: lua/requeue_members.lua.
	requeueMembersScript = loadScript("requeue_members")
	// scheduleSetScript creates or replaces schedules: lua/schedule_set.lua.
	scheduleSetScript = loadScript("schedule_set")
	// scheduleClaimScript claims the due schedules: lua/schedule_claim.lua.
	scheduleClaimScript = loadScript("schedule_claim")
	// scheduleCommitScript enqueues the ticks of claimed schedules, once each: lua/schedule_commit.lua.
	scheduleCommitScript = loadScript("schedule_commit")
	// scheduleControlScript deletes or pauses a schedule: lua/schedule_control.lua.
	scheduleControlScript = loadScript("schedule_control")
	// debounceScript enqueues jobs of bursts, each replacing its burst's pending job: lua/debounce.lua.
	debounceScript = loadScript("debounce")
	// debounceDueScript moves the jobs of bursts that are due into the scheduled set:
	// lua/debounce_due.lua.
	debounceDueScript = loadScript("debounce_due")
	// debounceEditScript reschedules, replaces or deletes a burst's pending job:
	// lua/debounce_edit.lua.
	debounceEditScript = loadScript("debounce_edit")
	// rescheduleScript replaces a scheduled or retry member by hand: lua/reschedule.lua.
	rescheduleScript = loadScript("reschedule")
)

// The enqueue scripts of a job given its ID by the caller, each wrapped by lua/with_job_id.lua, so
// that enqueueing the same ID twice makes one job. lua/enqueue_one.lua and lua/dead_letter.lua are
// used only so.
var (
	enqueueOneWithID    = loadWithJobID("enqueue_one")
	enqueueUniqueWithID = loadWithJobID("enqueue_unique")
	enqueueKeyedWithID  = loadWithJobID("enqueue_keyed")
	enqueueAfterWithID  = loadWithJobID("enqueue_after")
	deadLetterWithID    = loadWithJobID("dead_letter")
	debounceWithID      = loadWithJobID("debounce")
	groupAddWithID      = loadWithJobID("group_add")
)

// loadScript returns the script of lua/<name>.lua with its helpers (see scriptSource). It panics on a
// malformed file, which every test run therefore reports.
func loadScript(name string) *redis.Script {
	keys, src, err := scriptSource(name)
	if err != nil {
		panic(err)
	}
	return redis.NewScript(keys, src)
}

// loadWithJobID returns the script of lua/<name>.lua wrapped by lua/with_job_id.lua: idempotent by
// a job ID, whose mark is its last key and the mark's lifetime its last argument.
func loadWithJobID(name string) *redis.Script {
	keys, helpers, body, err := scriptParts(name)
	if err != nil {
		panic(err)
	}
	_, wrapper, err := readLua("lua/with_job_id.lua")
	if err != nil {
		panic(err)
	}
	const slot = "--[[wrapped]]"
	if strings.Count(wrapper, slot) != 1 {
		panic("lua/with_job_id.lua: want one " + slot + " line")
	}
	src, err := fillLuaConstants(helpers + strings.Replace(wrapper, slot, body, 1))
	if err != nil {
		panic(fmt.Errorf("lua/%s.lua in with_job_id: %w", name, err))
	}
	if keys >= 0 {
		keys++ // the mark
	}
	return redis.NewScript(keys, src)
}

// scriptSource returns the key count of lua/<name>.lua (-1 for "varies") and the text sent to Redis:
// the helpers its "uses" line names, each after the helpers it uses in turn and each once, then the
// script, with the ${name} placeholders of luaConstants filled in.
func scriptSource(name string) (keys int, src string, err error) {
	keys, helpers, body, err := scriptParts(name)
	if err != nil {
		return 0, "", err
	}
	if src, err = fillLuaConstants(helpers + body); err != nil {
		return 0, "", fmt.Errorf("lua/%s.lua: %w", name, err)
	}
	return keys, src, nil
}

// scriptParts returns the key count of lua/<name>.lua, the text of the helpers it uses (in order,
// each once) and its own text, placeholders not yet filled in.
func scriptParts(name string) (keys int, helpers, body string, err error) {
	h, body, err := readLua("lua/" + name + ".lua")
	if err != nil {
		return 0, "", "", err
	}
	switch k := h["keys"]; k {
	case "":
		return 0, "", "", fmt.Errorf("lua/%s.lua: no %q line in its header", name, "-- keys:")
	case "varies":
		keys = -1
	default:
		if keys, err = strconv.Atoi(k); err != nil || keys < 0 {
			return 0, "", "", fmt.Errorf("lua/%s.lua: keys %q is neither a count nor \"varies\"", name, k)
		}
	}
	lazy := map[string]bool{}
	for _, l := range luaList(h["loads"]) {
		lazy[l] = true
	}
	loads := map[string]string{} // per lazy helper, the statement that makes it
	var b strings.Builder
	state := map[string]int{} // 1: being added, 2: added
	var add func(from, helper string) error
	add = func(from, helper string) error {
		switch state[helper] {
		case 1:
			return fmt.Errorf("%s: helper %q uses itself, through the helpers it uses", from, helper)
		case 2:
			return nil
		}
		state[helper] = 1
		path := "lua/lib/" + helper + ".lua"
		hh, text, err := readLua(path)
		if err != nil {
			return fmt.Errorf("%s uses %q: %w", from, helper, err)
		}
		var deps []string // the helpers it uses that the script also makes when needed
		for _, u := range luaUses(hh) {
			if err := add(path, u); err != nil {
				return err
			}
			if lazy[u] {
				if !lazy[helper] {
					return fmt.Errorf("lua/%s.lua loads %q when it needs it, but %s uses it: list %q in its loads line too", name, u, path, helper)
				}
				deps = append(deps, u)
			}
		}
		if lazy[helper] {
			var load string
			if text, load, err = lazyHelper(path, helper, text, luaList(hh["defines"]), deps); err != nil {
				return err
			}
			loads[helper] = load
		}
		b.WriteString(text)
		b.WriteString("\n")
		state[helper] = 2
		return nil
	}
	for _, u := range luaUses(h) {
		if err := add("lua/"+name+".lua", u); err != nil {
			return 0, "", "", err
		}
	}
	for l := range lazy {
		if state[l] != 2 {
			return 0, "", "", fmt.Errorf("lua/%s.lua loads %q, which it does not use", name, l)
		}
		if !strings.Contains(body, loadPlaceholder(l)) {
			return 0, "", "", fmt.Errorf("lua/%s.lua loads %q but never writes %s", name, l, loadPlaceholder(l))
		}
	}
	// A lazy helper's statement names those of the helpers it needs first: replaced until none is left.
	for again := true; again; {
		again = false
		for l, load := range loads {
			if p := loadPlaceholder(l); strings.Contains(body, p) {
				body, again = strings.ReplaceAll(body, p, load), true
			}
		}
	}
	return keys, b.String(), body, nil
}

// lazyHelper returns the text of a helper that a script makes only where it needs it (its
// "loads" line), and the statement that makes it there. Redis runs a script's whole text on every
// call, and a closure costs about 0.1 µs to make and collect, more with upvalues: keyed's and
// workflow's helpers were about a quarter of an exchange call that fetches nothing. The
// text declares the helper's names (defines) and wraps the helper in make<Helper>, which returns
// them; the statement, which the script writes as ${load<Helper>}, assigns them once a run, after
// the helpers of deps. Written at the script's top level (not in a function), it assigns the
// script's own locals, and no closure captures the names to assign them. A name of defines must be
// declared once, at the start of a line, as "local function <name>(" or "local <name> =".
func lazyHelper(path, helper, text string, defines, deps []string) (lazy, load string, err error) {
	if len(defines) == 0 {
		return "", "", fmt.Errorf("%s: a helper made when needed must have a defines line", path)
	}
	want := map[string]int{}
	for _, d := range defines {
		want[d] = 0
	}
	for i, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, "local ")
		if !ok {
			continue
		}
		fn, isFn := strings.CutPrefix(rest, "function ")
		if isFn {
			rest = fn
		}
		end := strings.IndexAny(rest, " (=,")
		if end < 0 {
			continue
		}
		d := rest[:end]
		if _, ok := want[d]; !ok {
			continue
		}
		if !isFn && !strings.HasPrefix(strings.TrimLeft(rest[end:], " "), "=") {
			return "", "", fmt.Errorf("%s:%d: %s is declared with others; a helper made when needed declares each of its names alone", path, i+1, d)
		}
		want[d]++
	}
	for _, d := range defines {
		if want[d] != 1 {
			return "", "", fmt.Errorf("%s: %s is declared %d times at the start of a line, want once", path, d, want[d])
		}
	}
	names := strings.Join(defines, ", ")
	maker := "make" + titled(helper)
	lazy = fmt.Sprintf("local %s\nlocal %sDone = false\nlocal function %s()\n%s\nreturn %s\nend\n",
		names, helper, maker, text, names)
	for _, d := range deps {
		load += loadPlaceholder(d) + " "
	}
	load += fmt.Sprintf("if not %sDone then %sDone = true; %s = %s() end", helper, helper, names, maker)
	return lazy, load, nil
}

// loadPlaceholder is where a script makes a helper it loads: ${loadKeyed} for keyed.
func loadPlaceholder(helper string) string { return "${load" + titled(helper) + "}" }

// titled returns a helper's name with its first letter upper-case, as the names made of it take it.
func titled(helper string) string { return strings.ToUpper(helper[:1]) + helper[1:] }

// luaHeaderField matches a machine-read line of a header: "-- keys: 2".
var luaHeaderField = regexp.MustCompile(`^-- (keys|uses|defines|loads):(.*)$`)

// readLua returns the fields of a Lua file's header (the comment lines it opens with) and its text.
// Every file has a "uses" line.
func readLua(path string) (header map[string]string, text string, err error) {
	data, err := luaFiles.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	text = string(data)
	header = map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "--") {
			break
		}
		if m := luaHeaderField.FindStringSubmatch(line); m != nil {
			if _, dup := header[m[1]]; dup {
				return nil, "", fmt.Errorf("%s: two %q lines in its header", path, m[1])
			}
			header[m[1]] = strings.TrimSpace(m[2])
		}
	}
	if header["uses"] == "" {
		return nil, "", fmt.Errorf("%s: no %q line in its header", path, "-- uses:")
	}
	return header, text, nil
}

// luaUses lists the helpers of a header's "uses" line.
func luaUses(header map[string]string) []string {
	return luaList(header["uses"])
}

// luaList splits a header's list ("a, b"); "none" is the empty list.
func luaList(s string) []string {
	if s == "none" || s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// luaPlaceholder is where a script takes a value from Go: ${batchCounterUnit}.
var luaPlaceholder = regexp.MustCompile(`\$\{([A-Za-z0-9_]*)\}`)

// fillLuaConstants writes the values of luaConstants in place of their placeholders.
func fillLuaConstants(src string) (string, error) {
	var err error
	out := luaPlaceholder.ReplaceAllStringFunc(src, func(p string) string {
		name := p[2 : len(p)-1]
		v, ok := luaConstants[name]
		if !ok && err == nil {
			err = fmt.Errorf("no Go value for the placeholder %s", p)
		}
		return v
	})
	return out, err
}
