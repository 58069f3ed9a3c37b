//go:build bench || integration

package bench

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat
// (100 on Linux for x86 and arm64).
const clockTicks = 100

// proc is a process whose CPU and memory the bench reports.
type proc struct {
	name string
	pid  int
	args []string // the command line, for trainyard processes
}

// flag is the value of --name on p's command line ("" if absent).
func (p *proc) flag(name string) string {
	if i := slices.Index(p.args, "--"+name); i >= 0 && i+1 < len(p.args) {
		return p.args[i+1]
	}
	return ""
}

// trainyardProcesses finds the want `trainyard serve` and `trainyard
// worker` processes the harness started for dbURL: children of this
// process whose command line carries --database-url dbURL.
func trainyardProcesses(b testing.TB, dbURL string, want int) []*proc {
	var out []*proc
	self := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); !ok || ppid != self {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		i := slices.Index(args, "--database-url")
		if len(args) < 2 || i < 0 || i+1 >= len(args) || args[i+1] != dbURL {
			continue
		}
		out = append(out, &proc{name: "trainyard " + args[1], pid: pid, args: args})
	}
	slices.SortFunc(out, func(a, b *proc) int { return strings.Compare(a.name, b.name) })
	if len(out) != want {
		b.Fatalf("want %d trainyard processes for %s among this process's children, found %d", want, databaseName(dbURL), len(out))
	}
	return out
}

func selfProcess() *proc { return &proc{name: "bench (this process)", pid: os.Getpid()} }

// statFields are the fields of /proc/<pid>/stat after the command name:
// [0] is field 3 (state), so field k is [k-3].
func statFields(pid int) ([]string, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(string(raw[i+1:]))
	return f, len(f) > 13
}

func parentOf(pid int) (int, bool) {
	f, ok := statFields(pid)
	if !ok {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// cpuSeconds is utime + stime of pid.
func cpuSeconds(pid int) (float64, bool) {
	f, ok := statFields(pid)
	if !ok {
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return float64(u+s) / clockTicks, true
}

// postgresSeconds sums the CPU of every process named postgres: the
// server and all its backends, other users' included.
func postgresSeconds() float64 {
	var sum float64
	dirs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, p := range dirs {
		comm, err := os.ReadFile(p)
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if s, ok := cpuSeconds(pid); ok {
			sum += s
		}
	}
	return sum
}

// machineBusy is the busy and total jiffies of all CPUs from /proc/stat.
func machineBusy() (busy, total uint64) {
	fh, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	if !sc.Scan() {
		return 0, 0
	}
	f := strings.Fields(sc.Text())
	for i, v := range f[1:] {
		n, _ := strconv.ParseUint(v, 10, 64)
		if i >= 8 { // guest time is already counted in user
			break
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// cpuSample is a reading of every process's CPU seconds.
type cpuSample struct {
	procs       map[string]float64
	postgres    float64
	busy, total uint64
}

func sampleCPU(procs []*proc) cpuSample {
	s := cpuSample{procs: map[string]float64{}, postgres: postgresSeconds()}
	for _, p := range procs {
		if v, ok := cpuSeconds(p.pid); ok {
			s.procs[p.name] = v
		}
	}
	s.busy, s.total = machineBusy()
	return s
}

// cpuUse is the CPU a process used during a phase.
type cpuUse struct {
	name    string
	seconds float64
}

// cpuTotals adds up the CPU used between pairs of samples.
type cpuTotals struct {
	procs       map[string]float64
	postgres    float64
	busy, total uint64
}

func newCPUTotals() cpuTotals { return cpuTotals{procs: map[string]float64{}} }

func (t *cpuTotals) add(a, b cpuSample) {
	for name, v := range b.procs {
		if w, ok := a.procs[name]; ok {
			t.procs[name] += v - w
		}
	}
	t.postgres += max(b.postgres-a.postgres, 0)
	if b.total > a.total {
		t.busy += b.busy - a.busy
		t.total += b.total - a.total
	}
}

// uses lists the processes by name, then Postgres and the whole machine
// (busy share of all CPUs, as "%").
func (t cpuTotals) uses() []cpuUse {
	var out []cpuUse
	for name, v := range t.procs {
		out = append(out, cpuUse{name, v})
	}
	slices.SortFunc(out, func(x, y cpuUse) int { return strings.Compare(x.name, y.name) })
	out = append(out, cpuUse{"postgres (all backends, anyone's)", t.postgres})
	if t.total > 0 {
		out = append(out, cpuUse{"machine busy %", 100 * float64(t.busy) / float64(t.total)})
	}
	return out
}

// rssUse is a process's peak resident set.
type rssUse struct {
	name     string
	hwm, rss int64 // KiB
}

// peakRSS reads VmHWM and VmRSS of the trainyard processes.
func peakRSS(b testing.TB, procs []*proc) []rssUse {
	var out []rssUse
	for _, p := range procs {
		if !strings.HasPrefix(p.name, "trainyard ") {
			continue
		}
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/status")
		if err != nil {
			b.Errorf("%s (pid %d) is gone: %v", p.name, p.pid, err)
			continue
		}
		u := rssUse{name: p.name}
		for _, line := range strings.Split(string(raw), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			switch k {
			case "VmHWM":
				u.hwm = n
			case "VmRSS":
				u.rss = n
			}
		}
		out = append(out, u)
	}
	return out
}

func splitLines(s string) []string { return strings.Split(s, "\n") }
