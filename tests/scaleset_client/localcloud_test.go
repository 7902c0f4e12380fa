package scalesetclient

// The local cloud as a child process (tests/localcloud/localcloud.js), its GitHub control API,
// and the runner stand-in run from a JIT config. Everything is on 127.0.0.1.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type localCloud struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	web    string // the GitHub stand-in's origin, http://127.0.0.1:P
	dir    string // tests/localcloud
	stderr *lockedBuffer
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// nodeAndDir: RUNPOOL_NODE (default: node on PATH) and RUNPOOL_LOCALCLOUD_DIR (default: the
// sibling directory tests/localcloud), as ctest passes them.
func nodeAndDir(t *testing.T) (string, string) {
	node, dir := nodeAndDirOrError()
	if node == "" {
		t.Fatalf("node or the local cloud not found (set RUNPOOL_NODE, RUNPOOL_LOCALCLOUD_DIR; dir %q)", dir)
	}
	return node, dir
}

// nodeAndDirOrError: node "" when either is missing.
func nodeAndDirOrError() (string, string) {
	node := os.Getenv("RUNPOOL_NODE")
	if node == "" {
		if p, err := exec.LookPath("node"); err == nil {
			node = p
		}
	}
	dir := os.Getenv("RUNPOOL_LOCALCLOUD_DIR")
	if dir == "" {
		dir = filepath.Join("..", "localcloud")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", dir
	}
	if _, err := os.Stat(filepath.Join(abs, "localcloud.js")); err != nil {
		return "", abs
	}
	return node, abs
}

// startLocalCloud starts localcloud.js and reads its ready line. Closing its stdin stops it.
func startLocalCloud(t *testing.T) *localCloud {
	node, dir := nodeAndDir(t)
	cmd := exec.Command(node, filepath.Join(dir, "localcloud.js"), "--quiet")
	cmd.Dir = dir
	lc := &localCloud{cmd: cmd, dir: dir, stderr: &lockedBuffer{}}
	cmd.Stderr = lc.stderr
	var err error
	if lc.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the local cloud: %v", err)
	}
	t.Cleanup(lc.stop)
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var ready struct {
		Ready     bool              `json:"ready"`
		Endpoints map[string]string `json:"endpoints"`
	}
	select {
	case l, ok := <-line:
		if !ok {
			t.Fatalf("the local cloud exited before its ready line; stderr:\n%s", lc.stderr.String())
		}
		if err := json.Unmarshal([]byte(l), &ready); err != nil || !ready.Ready {
			t.Fatalf("bad ready line %q: %v", l, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no ready line in 30 s; stderr:\n%s", lc.stderr.String())
	}
	lc.web = ready.Endpoints["githubWeb"]
	if !strings.HasPrefix(lc.web, "http://127.0.0.1:") {
		t.Fatalf("the ready line has no GitHub stand-in on 127.0.0.1: %v", ready.Endpoints)
	}
	return lc
}

func (lc *localCloud) stop() {
	_ = lc.stdin.Close()
	done := make(chan struct{})
	go func() { _ = lc.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = lc.cmd.Process.Kill()
		<-done
	}
}

// control calls the GitHub stand-in's control API; a status >= 300 fails the test.
func (lc *localCloud) control(t *testing.T, method, path string, body any, out any) {
	t.Helper()
	status, data := lc.controlStatus(t, method, path, body)
	if status >= 300 {
		t.Fatalf("control %s %s: %d %s", method, path, status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("control %s %s: %v in %s", method, path, err, data)
		}
	}
}

func (lc *localCloud) controlStatus(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, lc.web+"/_control/github"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("control %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// jitRunner runs the local cloud's runner stand-in (tests/localcloud/runner, copied to a temp
// root) with a JIT config, as an actions-runner-controller pod would run the real runner.
type jitRunner struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{} // closed at exit
	err  error         // the exit status, once done
}

func (lc *localCloud) startJitRunner(t *testing.T, name, encodedJIT string) *jitRunner {
	t.Helper()
	r, err := lc.launchJitRunner(t, name, encodedJIT)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// launchJitRunner: startJitRunner for other goroutines than the test's (a scaler's): an error,
// not a failed test.
func (lc *localCloud) launchJitRunner(t *testing.T, name, encodedJIT string) (*jitRunner, error) {
	node, dir := nodeAndDirOrError()
	if node == "" {
		return nil, fmt.Errorf("node or the local cloud not found (RUNPOOL_NODE, RUNPOOL_LOCALCLOUD_DIR)")
	}
	root := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("cp", "-a", filepath.Join(dir, "runner"), root).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copying the runner stand-in: %v %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "Runner.Listener"), "run")
	cmd.Dir = root
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "ACTIONS_RUNNER_INPUT_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env,
		"PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"RUNNER_ALLOW_RUNASROOT=1",
		"ACTIONS_RUNNER_INPUT_JITCONFIG="+encodedJIT,
	)
	r := &jitRunner{cmd: cmd, out: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.out, r.out
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("starting the JIT runner %s: %v", name, err)
	}
	go func() { r.err = cmd.Wait(); cancel(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = cmd.Process.Kill()
			<-r.done
		}
	})
	return r, nil
}

// wait: the runner's exit (it runs one job, then exits 0).
func (r *jitRunner) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-r.done:
		if r.err != nil {
			t.Fatalf("JIT runner: %v\n%s", r.err, r.out.String())
		}
	case <-time.After(d):
		t.Fatalf("JIT runner still running after %s:\n%s", d, r.out.String())
	}
}

func must(t *testing.T, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}
