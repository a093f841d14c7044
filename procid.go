package work

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
)

// A pool writes in its heartbeat the identity of its process, "<boot ID>/<PID namespace>/<pid>/<start
// time>", read from /proc: the kernel's boot ID, the inode of the PID namespace, the pid, and the
// process's start time in clock ticks after boot. Another pool whose identity shares the first two
// (the same boot of the same machine, the same PID namespace) can tell from /proc that the process
// is gone: no process of that pid, or one started at another time, or a zombie. A pool on another
// machine or in another PID namespace (a restarted container gets a new one) proves nothing and
// waits for DeadPoolTimeout as before.

// processIdentity is this process's identity and its machine prefix, or "" when /proc cannot give
// them (another OS, /proc of another PID namespace, a restricted sandbox).
type processIdentity struct {
	id, machine string
}

// procRoot is where /proc is mounted.
const procRoot = "/proc"

// ownIdentity returns this process's identity, read once.
var ownIdentity = sync.OnceValue(func() processIdentity { return readIdentity(os.Getpid()) })

// readIdentity reads the identity of this process, whose pid is pid.
func readIdentity(pid int) processIdentity {
	boot, err := os.ReadFile(procRoot + "/sys/kernel/random/boot_id")
	if err != nil {
		return processIdentity{}
	}
	ns, err := os.Readlink(procRoot + "/self/ns/pid")
	if err != nil {
		return processIdentity{}
	}
	// /proc must be that of our PID namespace, or the pids of its peers would be read elsewhere.
	self, _, start, err := readStat(procRoot + "/self/stat")
	if err != nil || self != pid || hidesProcesses() {
		return processIdentity{}
	}
	bootID := strings.TrimSpace(string(boot))
	ns = strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	if bootID == "" || ns == "" || strings.Contains(bootID+ns, "/") {
		return processIdentity{}
	}
	machine := bootID + "/" + ns + "/"
	return processIdentity{id: machine + strconv.Itoa(pid) + "/" + start, machine: machine}
}

// hidesProcesses reports whether /proc may hide other users' processes (mounted with hidepid), where
// a missing pid would prove nothing; also when its mount cannot be read.
func hidesProcesses() bool {
	b, err := os.ReadFile(procRoot + "/self/mountinfo")
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(b), "\n") {
		// The mount point is field 5; the super block's options are the last field after " - ".
		fields := strings.Fields(line)
		sep := strings.Index(line, " - ")
		if len(fields) < 5 || fields[4] != "/proc" || sep < 0 {
			continue
		}
		for _, opt := range strings.Split(line[strings.LastIndexByte(line, ' ')+1:], ",") {
			if v, ok := strings.CutPrefix(opt, "hidepid="); ok && v != "0" && v != "off" {
				return true
			}
		}
		return false
	}
	return true
}

// readStat returns the pid, the state and the start time of a /proc/<pid>/stat file.
func readStat(path string) (pid int, state byte, start string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, "", err
	}
	s := string(b)
	// The command name, in parentheses, may hold spaces and parentheses: the fields follow its last ')'.
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 1 || end < open {
		return 0, 0, "", errors.New("work: unreadable stat")
	}
	pid, err = strconv.Atoi(strings.TrimSpace(s[:open]))
	fields := strings.Fields(s[end+1:])
	// fields[0] is the state (field 3), fields[19] the start time (field 22).
	if err != nil || len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0, "", errors.New("work: unreadable stat")
	}
	return pid, fields[0][0], fields[19], nil
}

// processGone reports whether the process a peer's heartbeat names is proven gone: it ran on this
// machine, in this PID namespace, and its pid now names no process, a zombie or another process.
// Anything it cannot read proves nothing.
func (p processIdentity) processGone(peer string) bool {
	if p.machine == "" || !strings.HasPrefix(peer, p.machine) {
		return false
	}
	rest := strings.Split(peer[len(p.machine):], "/")
	if len(rest) != 2 || rest[1] == "" {
		return false
	}
	pid, err := strconv.Atoi(rest[0])
	if err != nil || pid <= 0 {
		return false
	}
	_, state, start, err := readStat(procRoot + "/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	return state == 'Z' || state == 'X' || start != rest[1]
}
