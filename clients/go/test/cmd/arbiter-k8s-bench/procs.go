package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is a program this run started: in its own process group, killed by the kernel if this
// program dies first, and stopped (SIGTERM, then SIGKILL) by stop.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func startChild(name, logPath string, cmd *exec.Cmd) (*child, error) {
	out, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	if cmd.Stdout == nil {
		cmd.Stdout = out
	}
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(c.done)
	}()
	return c, nil
}

func (c *child) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.done:
		return
	case <-time.After(10 * time.Second):
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.done
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// startServer starts arbiter-server on loopback and returns its gRPC and metrics addresses, read
// from its first two lines of output.
func startServer(ctx context.Context, bin, dir string) (*child, string, string, error) {
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", "0", "--metrics-port", "0", "--log-level", "warn")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", "", err
	}
	c, err := startChild("arbiter-server", filepath.Join(dir, "arbiter-server.log"), cmd)
	if err != nil {
		return nil, "", "", err
	}
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(stdout)
		for i := 0; i < 2 && sc.Scan(); i++ {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() { // keep draining so that the server never blocks on stdout
		}
	}()
	var addr, metrics string
	timeout := time.After(30 * time.Second)
	for addr == "" || metrics == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				c.stop()
				return nil, "", "", fmt.Errorf("arbiter-server stopped announcing its ports:\n%s", tail(c.log, 2000))
			}
			if a, found := strings.CutPrefix(line, "listening on "); found {
				addr = a
			} else if a, found := strings.CutPrefix(line, "metrics on "); found {
				metrics = a
			}
		case <-timeout:
			c.stop()
			return nil, "", "", fmt.Errorf("arbiter-server announced no ports within 30 s:\n%s", tail(c.log, 2000))
		case <-ctx.Done():
			c.stop()
			return nil, "", "", context.Cause(ctx)
		}
	}
	return c, addr, metrics, nil
}

// startShim starts arbiter-k8s and waits until its caches are synced (/readyz).
func startShim(ctx context.Context, c *config, kubeconfig, server, dir string) (*child, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	httpAddr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{
		"--kubeconfig", kubeconfig, "--server", server, "--http-addr", httpAddr,
		"--leader-elect=false", "--kai-queues=false", "--namespace", shimNS, "--queue-configmap", queueCM,
	}
	if c.ShimQPS > 0 {
		args = append(args, "--kube-api-qps", strconv.FormatFloat(c.ShimQPS, 'g', -1, 64))
	}
	if c.ShimBurst > 0 {
		args = append(args, "--kube-api-burst", strconv.Itoa(c.ShimBurst))
	}
	if c.BindWorkers > 0 {
		args = append(args, "--bind-workers", strconv.Itoa(c.BindWorkers))
	}
	if c.Period > 0 {
		args = append(args, "--period", c.Period.String())
	}
	if c.ProfileDir != "" {
		args = append(args, "--profiling")
	}
	args = append(args, c.ShimArgs...)
	ch, err := startChild("arbiter-k8s", filepath.Join(dir, "arbiter-k8s.log"), exec.Command(c.ShimBin, args...))
	if err != nil {
		return nil, "", err
	}
	url := "http://" + httpAddr
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(time.Minute)
	for {
		if resp, err := hc.Get(url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return ch, url, nil
			}
		}
		if ch.exited() {
			return nil, "", fmt.Errorf("arbiter-k8s exited:\n%s", tail(ch.log, 3000))
		}
		if time.Now().After(deadline) {
			ch.stop()
			return nil, "", fmt.Errorf("arbiter-k8s not ready within 1 minute:\n%s", tail(ch.log, 3000))
		}
		select {
		case <-ctx.Done():
			ch.stop()
			return nil, "", context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// cpuSample holds the CPU seconds (user + system) used so far by this program, by each program
// it started (the control plane's, arbiter-server and arbiter-k8s, by name), and by the whole
// machine.
type cpuSample struct {
	at      time.Time
	procs   map[string]float64
	machine float64
}

// clockTicks is USER_HZ, which Linux fixes at 100 for /proc.
const clockTicks = 100

func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now(), procs: map[string]float64{}}
	self := os.Getpid()
	if v, _, ok := procCPU(self); ok {
		s.procs["arbiter-k8s-bench"] = v
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		v, ppid, ok := procCPU(pid)
		if !ok || ppid != self {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		name := filepath.Base(strings.SplitN(string(cmdline), "\x00", 2)[0])
		s.procs[name] += v
	}
	s.machine = machineBusy()
	return s
}

// procCPU reads utime + stime and the parent of pid from /proc/PID/stat.
func procCPU(pid int) (float64, int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// The command name is in parentheses and may hold spaces: the fields follow the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, _ := strconv.Atoi(f[1])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks, ppid, true
}

// machineBusy is the CPU seconds all cores spent not idle since boot (/proc/stat).
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0
	}
	var busy float64
	for i, v := range f[1:] {
		x, _ := strconv.ParseFloat(v, 64)
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest time is counted in user already
			break
		}
		busy += x
	}
	return busy / clockTicks
}

// minus is the CPU used between s0 and s.
func (s cpuSample) minus(s0 cpuSample) *CPU {
	out := &CPU{WindowSeconds: s.at.Sub(s0.at).Seconds(), Cores: numCPU(), Processes: map[string]float64{}}
	for name, v := range s.procs {
		out.Processes[name] = round(v-s0.procs[name], 2)
	}
	out.MachineBusy = round(s.machine-s0.machine, 2)
	return out
}
