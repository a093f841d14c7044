package rdb

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"
)

// luaNames lists the files of a folder of luaFiles, without their extension.
func luaNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := fs.ReadDir(luaFiles, dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".lua") {
			names = append(names, strings.TrimSuffix(e.Name(), ".lua"))
		}
	}
	if len(names) == 0 {
		t.Fatalf("no .lua files in %s", dir)
	}
	return names
}

// luaHeader returns the comment lines a Lua file opens with.
func luaHeader(t *testing.T, file string) []string {
	t.Helper()
	data, err := luaFiles.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var h []string
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "--") {
			break
		}
		h = append(h, line)
	}
	return h
}

// hasLine reports whether a header has a line starting with prefix.
func hasLine(header []string, prefix string) bool {
	for _, l := range header {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

func TestLuaScriptHeadersSayWhatTheyTakeAndReturn(t *testing.T) {
	for _, name := range luaNames(t, "lua") {
		file := "lua/" + name + ".lua"
		h := luaHeader(t, file)
		if len(h) == 0 || luaHeaderField.MatchString(h[0]) || strings.TrimSpace(strings.TrimPrefix(h[0], "--")) == "" {
			t.Errorf("%s: the header does not open with what the script does", file)
		}
		fields, _, err := readLua(file)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if fields["keys"] == "" {
			t.Errorf("%s: no \"-- keys:\" line", file)
		}
		if fields["defines"] != "" {
			t.Errorf("%s: a script defines nothing for others; helpers go in lua/lib", file)
		}
		for _, section := range []string{"-- KEYS", "-- ARGV", "-- Returns"} {
			if !hasLine(h, section) {
				t.Errorf("%s: the header has no line starting %q", file, section)
			}
		}
	}
}

func TestLuaHelpersDefineWhatTheirHeaderSays(t *testing.T) {
	for _, name := range luaNames(t, "lua/lib") {
		file := "lua/lib/" + name + ".lua"
		fields, text, err := readLua(file)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if fields["keys"] != "" {
			t.Errorf("%s: a helper takes no keys of its own", file)
		}
		defines := luaList(fields["defines"])
		if len(defines) == 0 {
			t.Errorf("%s: no \"-- defines:\" line", file)
		}
		for _, d := range defines {
			re := regexp.MustCompile(`(?m)^local (function )?` + regexp.QuoteMeta(d) + `\b`)
			if !re.MatchString(text) {
				t.Errorf("%s: defines %s, but declares no local of that name", file, d)
			}
		}
	}
}

func TestLuaUsesNameHelpersThatExistAndEveryHelperIsUsed(t *testing.T) {
	helpers := map[string]bool{}
	for _, name := range luaNames(t, "lua/lib") {
		helpers[name] = false
	}
	for _, dir := range []string{"lua", "lua/lib"} {
		for _, name := range luaNames(t, dir) {
			file := path.Join(dir, name+".lua")
			fields, _, err := readLua(file)
			if err != nil {
				t.Errorf("%v", err)
				continue
			}
			for _, u := range luaUses(fields) {
				if _, ok := helpers[u]; !ok {
					t.Errorf("%s uses %q: there is no lua/lib/%s.lua", file, u, u)
					continue
				}
				helpers[u] = true
			}
		}
	}
	for h, used := range helpers {
		if !used {
			t.Errorf("lua/lib/%s.lua is used by no script", h)
		}
	}
}

// Every script is loaded once, by a file of the store: scripts.go, or the file that owns its family
// of state (keyed.go for keyed jobs, say).
func TestEveryLuaScriptIsLoadedByAGoVar(t *testing.T) {
	loaded := map[string]int{}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// A script is loaded as it is (loadScript) or wrapped by with_job_id (loadWithJobID), once
		// each at most; the wrapper is loaded with every script it wraps.
		for _, m := range regexp.MustCompile(`load(Script|WithJobID)\("([^"]+)"\)`).FindAllStringSubmatch(string(src), -1) {
			loaded[m[2]] += map[string]int{"Script": 1, "WithJobID": 10}[m[1]]
			if m[1] == "WithJobID" {
				loaded["with_job_id"] = 1
			}
		}
	}
	for _, name := range luaNames(t, "lua") {
		if n := loaded[name]; n == 0 || n%10 > 1 || n/10 > 1 {
			t.Errorf("lua/%s.lua is loaded %d times as it is and %d times wrapped, want once each at most and once at least", name, n%10, n/10)
		}
		delete(loaded, name)
	}
	for name := range loaded {
		t.Errorf("a script %q is loaded, which is no file in lua/", name)
	}
}

func TestLuaScriptsLoadIntoRedis(t *testing.T) {
	pool := newTestPool(t)
	conn := pool.Get()
	defer conn.Close()
	names := luaNames(t, "lua")
	sort.Strings(names)
	for _, name := range names {
		keys, src, err := scriptSource(name)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if strings.Contains(src, "${") {
			t.Errorf("lua/%s.lua: a placeholder is left in the text sent to Redis", name)
		}
		// SCRIPT LOAD compiles the script: a syntax error (in the script or a helper) fails here.
		sha, err := redis.String(conn.Do("SCRIPT", "LOAD", src))
		if err != nil {
			t.Errorf("lua/%s.lua does not load: %v", name, err)
			continue
		}
		if want := redis.NewScript(keys, src).Hash(); sha != want {
			t.Errorf("lua/%s.lua: SCRIPT LOAD returned %s, want %s", name, sha, want)
		}
	}
}

func TestLuaConstantsComeFromGo(t *testing.T) {
	for _, name := range []string{"exchange", "batch", "enqueue_after", "delete_member"} {
		_, src, err := scriptSource(name)
		if err != nil {
			t.Fatal(err)
		}
		// A script that makes workflow's helpers when it needs them (its loads line) assigns WK.
		want := regexp.MustCompile(`(?m)^(local )?WK = ` + strconv.Itoa(BatchCounterUnit) + `$`)
		if !want.MatchString(src) {
			t.Errorf("lua/%s.lua with its helpers has no line %q", name, want)
		}
	}
	if _, err := fillLuaConstants("local x = ${noSuchConstant}"); err == nil {
		t.Error("an unknown placeholder was filled in without an error")
	}
}

func TestLuaHelpersComeFirstAndOnce(t *testing.T) {
	// delete_member uses workflow and removedbyhand, which uses workflow in turn: workflow once, first.
	_, src, err := scriptSource("delete_member")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(src, "local function settle("); n != 1 {
		t.Errorf("workflow's settle is declared %d times, want once", n)
	}
	w, r, body := strings.Index(src, "local function settle("), strings.Index(src, "local function removedByHand("),
		strings.Index(src, "if redis.call('zrem'")
	if !(w >= 0 && w < r && r < body) {
		t.Errorf("want workflow, then removedbyhand, then the script: at %d, %d, %d", w, r, body)
	}
}

// Scripts read status replies (TYPE's) only through keychecks' statusText, which takes both forms a
// server may hand to Lua: Redis's {ok = text} and the plain text of miniredis before v2.19.0.
func TestLuaReadsStatusRepliesThroughOneHelper(t *testing.T) {
	direct := regexp.MustCompile(`\.ok\b|redis\.p?call\('type'`)
	for _, dir := range []string{"lua", "lua/lib"} {
		for _, name := range luaNames(t, dir) {
			file := path.Join(dir, name+".lua")
			data, err := luaFiles.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(data), "\n") {
				code, _, _ := strings.Cut(line, "--")
				if !direct.MatchString(code) {
					continue
				}
				if file == "lua/lib/keychecks.lua" && (strings.Contains(code, "function statusText") ||
					strings.Contains(code, "return r.ok") || strings.Contains(code, "function keyType")) {
					continue
				}
				t.Errorf("%s:%d reads a status reply itself (use statusText or keyType): %s", file, i+1, strings.TrimSpace(line))
			}
		}
	}
}

func TestLuaReplyHelpers(t *testing.T) {
	pool := newTestPool(t)
	conn := pool.Get()
	defer conn.Close()
	_, lib, err := readLua("lua/lib/keychecks.lua")
	if err != nil {
		t.Fatal(err)
	}
	key := "work-test-reply-helpers"
	conn.Do("DEL", key)
	defer conn.Do("DEL", key)
	if _, err := conn.Do("SET", key, "v"); err != nil {
		t.Fatal(err)
	}
	body := `
local out = {}
out[1] = statusText({ok = 'table form'})
out[2] = statusText('plain form')
out[3] = keyType(KEYS[1])
out[4] = keyType(KEYS[1] .. ':missing')
local r = pcallReply('llen', KEYS[1])
out[5] = tostring(wrongType(r, 'nothing'))
out[6] = tostring(wrongType(pcallReply('strlen', KEYS[1]), 'nothing'))
local ok, e = pcall(wrongType, pcallReply('lpush', KEYS[1] .. ':missing'), 'LPUSH with no value')
out[7] = tostring(ok) .. ' ' .. tostring(e)
return out`
	got, err := redis.Strings(conn.Do("EVAL", lib+"\n"+body, 1, key))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"table form", "plain form", "string", "none", "true", "false"}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("reply %d: %q, want %q", i+1, got[i], w)
		}
	}
	if !strings.HasPrefix(got[6], "false ") || !strings.Contains(got[6], "the server lacks LPUSH with no value: ") {
		t.Errorf("wrongType on another error: %q, want it to stop the script naming what the server lacks", got[6])
	}
}

// A helper a script loads when it needs it (lazyHelper) declares its names up front and makes them
// only where the script writes its statement, once a run, after the helpers it depends on.
func TestLazyHelperMakesItsNamesWhenLoaded(t *testing.T) {
	pool := newTestPool(t)
	conn := pool.Get()
	defer conn.Close()
	dep, depLoad, err := lazyHelper("dep.lua", "dep", "local function twice(x) return 2 * x end", []string{"twice"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := "-- defines: STEP, plus\nlocal STEP = 3\nlocal function plus(x)\n  return twice(x) + STEP\nend"
	lib, libLoad, err := lazyHelper("lib.lua", "lib", text, []string{"STEP", "plus"}, []string{"dep"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(libLoad, loadPlaceholder("dep")+" ") {
		t.Fatalf("lib's statement %q does not make dep first", libLoad)
	}
	libLoad = strings.Replace(libLoad, loadPlaceholder("dep"), depLoad, 1)
	body := "local before = tostring(plus == nil and twice == nil)\n" + libLoad + "\n" + libLoad +
		"\nreturn {before, plus(5), STEP}"
	got, err := redis.Values(conn.Do("EVAL", dep+lib+body, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got[0].([]byte)) != "true" || got[1].(int64) != 13 || got[2].(int64) != 3 {
		t.Fatalf("got %q, want the names unset before the statement, then plus(5) = 13 and STEP 3", got)
	}
	for _, bad := range []string{
		"local STEP, other = 3, 4\nlocal function plus(x) return x end", // declared with another
		"local function plus(x) return x end",                           // STEP never declared
		"local STEP = 3\nlocal STEP = 4\nlocal function plus(x) return x end",
	} {
		if _, _, err := lazyHelper("lib.lua", "lib", bad, []string{"STEP", "plus"}, nil); err == nil {
			t.Errorf("lazyHelper took %q", bad)
		}
	}
	// The exchange script makes keyed's and workflow's helpers only where it needs them, at its top
	// level, and every placeholder is filled in.
	_, src, err := scriptSource("exchange")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nlocal function makeKeyed()\n", "\nlocal function makeWorkflow()\n",
		"if not keyedDone then keyedDone = true; keyedNum, "} {
		if !strings.Contains(src, want) {
			t.Errorf("the exchange script has no %q", want)
		}
	}
	if strings.Contains(src, "${") {
		t.Error("the exchange script keeps a placeholder")
	}
}

// A lane job's score text (laneScore) is written from integers: it must read as a number above vt
// that rises with seq, for the virtual times a name reaches, and a number at least vt beyond them.
func TestLaneScoreRisesWithSeqAboveVt(t *testing.T) {
	pool := newTestPool(t)
	conn := pool.Get()
	defer conn.Close()
	lib := keyedHelpers(t)
	body := `
local out = {}
for i = 1, #ARGV, 2 do out[#out + 1] = laneScore(tonumber(ARGV[i]), tonumber(ARGV[i + 1])) end
return out`
	for _, vt := range []float64{0, 0.1234567891, 1.0 / 3, 41.999999, 1e6 + 0.5, 999999999.25, 5e9, 1e12} {
		args := []interface{}{lib + body, 0}
		for _, seq := range []int{1, 2, 3, 99, 100, 101, 9999, 10000, 999998, 999999} {
			args = append(args, strconv.FormatFloat(vt, 'g', 17, 64), seq)
		}
		got, err := redis.Strings(conn.Do("EVAL", args...))
		if err != nil {
			t.Fatal(err)
		}
		prev := vt
		for i, text := range got {
			f, err := strconv.ParseFloat(text, 64)
			// Past what a step can tell apart in a double (a billion turns), scores may repeat.
			if err != nil || f < prev || f == prev && vt < 1e9 {
				t.Fatalf("vt %v: score %d %q (%v), want a number above %v", vt, i+1, text, err, prev)
			}
			prev = f
		}
	}
}

// The scripts that run per job (the fetch and acknowledgement, debounced and grouped enqueues) and
// those that fire schedules (per bucket and per tick) pass Redis text: a Lua number passed to
// redis.call is formatted to text on every call (as much work as a small command). This guards
// what benches' schedules workload measured, and the acknowledgement's LREM.
func TestHotScriptsPassRedisText(t *testing.T) {
	literal := regexp.MustCompile(`redis\.p?call\([^)]*,\s*-?[0-9][0-9.]*\s*[,)]`)
	// Lua's own functions take numbers: their arguments are not Redis's.
	luaCall := regexp.MustCompile(`(unpack|math\.\w+)\([^()]*\)`)
	for _, name := range []string{"schedule_claim", "schedule_commit", "exchange", "debounce", "group_add"} {
		file := "lua/" + name + ".lua"
		data, err := luaFiles.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			code, _, _ := strings.Cut(line, "--")
			for prev := ""; prev != code; {
				prev, code = code, luaCall.ReplaceAllString(code, "x") // inner calls first
			}
			if literal.MatchString(code) {
				t.Errorf("%s:%d passes Redis a Lua number: %s", file, i+1, strings.TrimSpace(line))
			}
		}
	}
}
