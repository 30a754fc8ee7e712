package controlplane

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is one program of the control plane, logging to Dir/NAME.log.
type process struct {
	name string
	bin  string
	args []string
	log  string
	dir  string

	cmd  *exec.Cmd
	done chan struct{}
}

// start runs the binary name from BinDir with args and keeps it for Stop.
func (cp *ControlPlane) start(name string, args ...string) (*process, error) {
	bin := filepath.Join(cp.opts.BinDir, name)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: %w (build it with tests/k8s/control-plane/build.sh)", name, err)
	}
	return cp.startBinary(name, bin, args...)
}

// StartProcess runs another program beside the control plane (arbiter-server, say), logging to
// Dir/NAME.log, stopped by Stop like the rest. It returns the log's path.
func (cp *ControlPlane) StartProcess(name, bin string, args ...string) (string, error) {
	p, err := cp.startBinary(name, bin, args...)
	if err != nil {
		return "", err
	}
	return p.log, nil
}

func (cp *ControlPlane) startBinary(name, bin string, args ...string) (*process, error) {
	p := &process{name: name, bin: bin, args: args, log: filepath.Join(cp.Dir, name+".log"), dir: cp.Dir}
	if err := p.run(); err != nil {
		return nil, err
	}
	cp.mu.Lock()
	cp.procs = append(cp.procs, p)
	cp.mu.Unlock()
	return p, nil
}

func (p *process) run() error {
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, and killed if the starting process dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return nil
}

// stop sends SIGTERM, then SIGKILL after grace (at once when grace is 0), and waits.
func (p *process) stop(grace time.Duration) {
	if p.cmd == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	if grace > 0 {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
			return
		case <-time.After(grace):
		}
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Tail returns at most the last n bytes of the file at path ("" if it cannot be read).
func Tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
