// Package scalesetclient checks the local cloud's runner scale-set API against GitHub's own Go
// client, github.com/actions/scaleset (the client actions-runner-controller uses): every call
// the client makes must be accepted and every message it reads must decode. A stand-in that
// only runpool's own tests talk to could drift from the real API unnoticed; this client cannot.
package scalesetclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/actions/scaleset"
)

const (
	pat      = "ghp_scaleset_client_check"
	owner    = "acme"
	setName  = "rp-scaleset"
	capacity = 5
)

type job struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"`
}

func TestScaleSetClientAgainstTheStandIn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	lc := startLocalCloud(t)
	lc.control(t, "POST", "/settings", map[string]any{"scaleSetPollMs": 1000, "scaleSetAssignTimeoutMs": 30000, "pollMs": 500}, nil)
	lc.control(t, "POST", "/pats", map[string]any{"token": pat, "owners": []string{owner}}, nil)
	lc.control(t, "POST", "/runner-groups", map[string]any{"owner": owner, "name": "scale"}, nil)

	// A configuration URL on a host that is not github.com: the client takes the GHES form of
	// the API (<origin>/api/v3) and keeps the URL's http scheme.
	client, err := scaleset.NewClientWithPersonalAccessToken(scaleset.NewClientWithPersonalAccessTokenConfig{
		GitHubConfigURL:     lc.web + "/" + owner,
		PersonalAccessToken: pat,
		SystemInfo:          scaleset.SystemInfo{System: "runpool-scaleset-check", Subsystem: "test"},
	}, scaleset.WithRetryMax(3), scaleset.WithRetryWaitMax(3*time.Second))
	must(t, err, "new client")

	// Runner groups: discovery (registration token, runner-registration) happens on this first call.
	def, err := client.GetRunnerGroupByName(ctx, scaleset.DefaultRunnerGroup)
	must(t, err, "GetRunnerGroupByName(default)")
	if def.ID != 1 || !def.IsDefault {
		t.Fatalf("default group: %+v", def)
	}
	scaleGroup, err := client.GetRunnerGroupByName(ctx, "scale")
	must(t, err, "GetRunnerGroupByName(scale)")

	absent, err := client.GetRunnerScaleSet(ctx, def.ID, setName)
	must(t, err, "GetRunnerScaleSet before create")
	if absent != nil {
		t.Fatalf("a set before it was created: %+v", absent)
	}

	// Create, with one injected 503 (Retry-After: 1) that the client's retries must absorb.
	lc.control(t, "POST", "/scalesets/faults", map[string]any{"operation": "createScaleSet", "status": 503, "retryAfterSeconds": 1}, nil)
	set, err := client.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{
		Name: setName, RunnerGroupID: def.ID, Labels: []scaleset.Label{{Name: setName}, {Name: "linux-x64"}},
		RunnerSetting: scaleset.RunnerSetting{DisableUpdate: true},
	})
	must(t, err, "CreateRunnerScaleSet")
	if set.ID == 0 || set.Name != setName || len(set.Labels) != 2 || set.Labels[0].Type != "System" || set.RunnerGroupName != "Default" || set.Statistics == nil {
		t.Fatalf("created set: %+v", set)
	}
	var faults struct {
		Pending map[string]any `json:"pending"`
	}
	lc.control(t, "GET", "/scalesets/faults", nil, &faults)
	if len(faults.Pending) != 0 {
		t.Fatalf("the injected 503 was not consumed: %v", faults.Pending)
	}

	byName, err := client.GetRunnerScaleSet(ctx, def.ID, setName)
	must(t, err, "GetRunnerScaleSet")
	byID, err := client.GetRunnerScaleSetByID(ctx, set.ID)
	must(t, err, "GetRunnerScaleSetByID")
	if byName == nil || byName.ID != set.ID || byID.ID != set.ID {
		t.Fatalf("get by name %+v, by id %+v, want id %d", byName, byID, set.ID)
	}
	// Partial updates, as actions-runner-controller sends them: only the group, then back.
	moved, err := client.UpdateRunnerScaleSet(ctx, set.ID, &scaleset.RunnerScaleSet{RunnerGroupID: scaleGroup.ID})
	must(t, err, "UpdateRunnerScaleSet(group)")
	if moved.RunnerGroupID != scaleGroup.ID || moved.RunnerGroupName != "scale" || moved.Name != setName || len(moved.Labels) != 2 {
		t.Fatalf("updated set: %+v", moved)
	}
	_, err = client.UpdateRunnerScaleSet(ctx, set.ID, &scaleset.RunnerScaleSet{RunnerGroupID: def.ID})
	must(t, err, "UpdateRunnerScaleSet(back)")

	// One message session per set: a second one conflicts while the first is live.
	sess, err := client.MessageSessionClient(ctx, set.ID, "runpool-check")
	must(t, err, "MessageSessionClient")
	if s := sess.Session(); !strings.HasPrefix(s.MessageQueueURL, "http://127.0.0.1:") || s.MessageQueueAccessToken == "" || s.RunnerScaleSet == nil || s.RunnerScaleSet.ID != set.ID {
		t.Fatalf("session: %+v", s)
	}
	if _, err := client.MessageSessionClient(ctx, set.ID, "runpool-check-2"); err == nil || !strings.Contains(err.Error(), "RunnerScaleSetSessionConflictException") {
		t.Fatalf("a second session: %v, want a RunnerScaleSetSessionConflictException", err)
	}

	// Two jobs for the set's labels.
	var jobs []job
	for _, n := range []string{"build", "test"} {
		var j job
		lc.control(t, "POST", "/jobs", map[string]any{"labels": []string{setName}, "owner": owner, "repo": "app", "name": n, "durationMs": 300}, &j)
		jobs = append(jobs, j)
	}

	loop := &messageLoop{t: t, sess: sess}
	// JobAvailable: v0.2.0 decodes no JobAvailable (it skips unknown types), so the first
	// message shows as statistics only.
	loop.until(ctx, "statistics with 2 available jobs", func(m *scaleset.RunnerScaleSetMessage) bool {
		return m.Statistics != nil && m.Statistics.TotalAvailableJobs == 2
	})

	// Acquire. v0.2.0 has no call for it (acquirejobs came back to the client later), so this
	// one request is made here as the client's later versions make it: the session's queue token,
	// a bare array of runner request ids.
	acquired := acquireJobs(ctx, t, set, sess.Session().MessageQueueAccessToken, jobs[0].ID, jobs[1].ID)
	if len(acquired) != 2 {
		t.Fatalf("acquired %v, want both jobs", acquired)
	}
	loop.until(ctx, "JobAssigned for both jobs", func(*scaleset.RunnerScaleSetMessage) bool { return len(loop.assigned) == 2 })
	for _, a := range loop.assigned {
		if a.OwnerName != owner || a.RepositoryName != "app" || a.QueueTime.IsZero() || a.ScaleSetAssignTime.IsZero() ||
			len(a.RequestLabels) != 1 || a.RequestLabels[0] != setName || a.JobID == "" || a.WorkflowRunID == 0 ||
			!strings.HasPrefix(a.JobWorkflowRef, owner+"/app/.github/workflows/") || a.EventName == "" {
			t.Fatalf("JobAssigned: %+v", a)
		}
	}
	if s := loop.last; s.TotalAssignedJobs != 2 || s.TotalAvailableJobs != 0 {
		t.Fatalf("statistics after acquire: %+v", s)
	}

	// The queue token expires: the client's next poll gets 401, refreshes the session (PATCH)
	// and polls again with the new token.
	before := sess.Session().MessageQueueAccessToken
	lc.control(t, "POST", fmt.Sprintf("/scalesets/%d/expire-queue-token", set.ID), nil, nil)
	loop.poll(ctx)
	if sess.Session().MessageQueueAccessToken == before {
		t.Fatal("the session was not refreshed after a 401")
	}

	// JIT configs: one runner per job, run by the local cloud's runner stand-in.
	var runners []*scaleset.RunnerScaleSetJitRunnerConfig
	for _, n := range []string{"rp-runner-1", "rp-runner-2"} {
		jit, err := client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: n, WorkFolder: "_work"}, set.ID)
		must(t, err, "GenerateJitRunnerConfig(%s)", n)
		if jit.Runner == nil || jit.Runner.Name != n || jit.Runner.RunnerScaleSetID != set.ID || jit.EncodedJITConfig == "" {
			t.Fatalf("JIT config: %+v", jit)
		}
		runners = append(runners, jit)
	}
	if _, err := client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: "rp-runner-1"}, set.ID); !errors.Is(err, scaleset.RunnerExistsError) {
		t.Fatalf("a taken runner name: %v, want RunnerExistsError", err)
	}
	ref, err := client.GetRunner(ctx, runners[0].Runner.ID)
	must(t, err, "GetRunner")
	named, err := client.GetRunnerByName(ctx, "rp-runner-2")
	must(t, err, "GetRunnerByName")
	none, err := client.GetRunnerByName(ctx, "nobody")
	must(t, err, "GetRunnerByName(absent)")
	if ref.Name != "rp-runner-1" || ref.RunnerScaleSetID != set.ID || named == nil || named.ID != runners[1].Runner.ID || none != nil {
		t.Fatalf("runner lookups: %+v %+v %+v", ref, named, none)
	}
	// A 429 with Retry-After on a lookup is absorbed by the client's retries.
	lc.control(t, "POST", "/scalesets/faults", map[string]any{"operation": "getRunner", "status": 429, "retryAfterSeconds": 1}, nil)
	_, err = client.GetRunner(ctx, runners[1].Runner.ID)
	must(t, err, "GetRunner after a 429")

	procs := []*jitRunner{
		lc.startJitRunner(t, "rp-runner-1", runners[0].EncodedJITConfig),
		lc.startJitRunner(t, "rp-runner-2", runners[1].EncodedJITConfig),
	}
	loop.until(ctx, "JobStarted and JobCompleted for both jobs", func(*scaleset.RunnerScaleSetMessage) bool {
		return len(loop.started) == 2 && len(loop.completed) == 2
	})
	for _, p := range procs {
		p.wait(t, 20*time.Second)
	}
	for _, s := range loop.started {
		if s.RunnerID == 0 || !strings.HasPrefix(s.RunnerName, "rp-runner-") || s.RunnerAssignTime.IsZero() {
			t.Fatalf("JobStarted: %+v", s)
		}
	}
	for _, c := range loop.completed {
		if c.Result != "succeeded" || c.FinishTime.IsZero() || c.RunnerID == 0 || !strings.HasPrefix(c.RunnerName, "rp-runner-") {
			t.Fatalf("JobCompleted: %+v", c)
		}
	}
	if s := loop.last; s.TotalAssignedJobs != 0 || s.TotalRunningJobs != 0 {
		t.Fatalf("statistics after the jobs: %+v", s)
	}
	// The ephemeral runners are gone once their job is done.
	if _, err := client.GetRunner(ctx, runners[0].Runner.ID); !errors.Is(err, scaleset.RunnerNotFoundError) {
		t.Fatalf("a finished JIT runner: %v, want RunnerNotFoundError", err)
	}

	// Remove a runner that never ran; removing it again is fine too.
	spare, err := client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: "rp-spare"}, set.ID)
	must(t, err, "GenerateJitRunnerConfig(spare)")
	must(t, client.RemoveRunner(ctx, int64(spare.Runner.ID)), "RemoveRunner")
	must(t, client.RemoveRunner(ctx, int64(spare.Runner.ID)), "RemoveRunner again")
	if r, err := client.GetRunnerByName(ctx, "rp-spare"); err != nil || r != nil {
		t.Fatalf("a removed runner: %+v %v", r, err)
	}

	// A 200 with an empty body (seen in an outage) is a decode error for the client.
	lc.control(t, "POST", "/scalesets/faults", map[string]any{"operation": "getMessage", "status": "empty"}, nil)
	if _, err := sess.GetMessage(ctx, loop.lastID, capacity); err == nil {
		t.Fatal("an empty 200 was accepted")
	}

	must(t, sess.Close(ctx), "delete the session")
	must(t, client.DeleteRunnerScaleSet(ctx, set.ID), "DeleteRunnerScaleSet")
	if _, err := client.GetRunnerScaleSetByID(ctx, set.ID); err == nil || !strings.Contains(err.Error(), "RunnerScaleSetNotFoundException") {
		t.Fatalf("a deleted set: %v", err)
	}

	// A set the service deletes behind the listener's back: its next poll is a 404.
	other, err := client.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{Name: "rp-doomed", RunnerGroupID: def.ID})
	must(t, err, "CreateRunnerScaleSet(doomed)")
	doomed, err := client.MessageSessionClient(ctx, other.ID, "runpool-check")
	must(t, err, "MessageSessionClient(doomed)")
	lc.control(t, "DELETE", fmt.Sprintf("/scalesets/%d", other.ID), nil, nil)
	if _, err := doomed.GetMessage(ctx, 0, capacity); err == nil || !strings.Contains(err.Error(), "RunnerScaleSetNotFoundException") {
		t.Fatalf("polling a deleted set: %v", err)
	}
	if _, err := client.MessageSessionClient(ctx, other.ID, "runpool-check"); err == nil || !strings.Contains(err.Error(), "RunnerScaleSetNotFoundException") {
		t.Fatalf("a session for a deleted set: %v", err)
	}
}

// messageLoop polls as a listener does (lastMessageId, max capacity), acknowledges each message
// by deleting it, and keeps what it decoded.
type messageLoop struct {
	t         *testing.T
	sess      *scaleset.MessageSessionClient
	lastID    int
	last      scaleset.RunnerScaleSetStatistic
	assigned  []*scaleset.JobAssigned
	started   []*scaleset.JobStarted
	completed []*scaleset.JobCompleted
}

func (l *messageLoop) poll(ctx context.Context) *scaleset.RunnerScaleSetMessage {
	l.t.Helper()
	m, err := l.sess.GetMessage(ctx, l.lastID, capacity)
	must(l.t, err, "GetMessage(lastMessageId=%d)", l.lastID)
	if m == nil {
		return nil // 202: nothing within the long poll
	}
	if m.MessageID <= l.lastID {
		l.t.Fatalf("message %d after %d", m.MessageID, l.lastID)
	}
	l.lastID = m.MessageID
	if m.Statistics == nil {
		l.t.Fatalf("message %d without statistics", m.MessageID)
	}
	l.last = *m.Statistics
	l.assigned = append(l.assigned, m.JobAssignedMessages...)
	l.started = append(l.started, m.JobStartedMessages...)
	l.completed = append(l.completed, m.JobCompletedMessages...)
	must(l.t, l.sess.DeleteMessage(ctx, m.MessageID), "DeleteMessage(%d)", m.MessageID)
	return m
}

// until polls until done(message) holds, at most 40 polls.
func (l *messageLoop) until(ctx context.Context, what string, done func(*scaleset.RunnerScaleSetMessage) bool) {
	l.t.Helper()
	for i := 0; i < 40; i++ {
		if m := l.poll(ctx); m != nil && done(m) {
			return
		}
	}
	l.t.Fatalf("no %s after 40 polls (assigned %d, started %d, completed %d, statistics %+v)", what, len(l.assigned), len(l.started), len(l.completed), l.last)
}

// acquireJobs: POST <Actions service>/_apis/runtime/runnerscalesets/{id}/acquirejobs with the
// queue token, as the scale-set clients do.
func acquireJobs(ctx context.Context, t *testing.T, set *scaleset.RunnerScaleSet, queueToken string, ids ...int64) []int64 {
	t.Helper()
	u := strings.TrimSuffix(set.RunnerJitConfigURL, "/generatejitconfig") + "/acquirejobs?api-version=6.0-preview"
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("acquire URL %q", u)
	}
	body, _ := json.Marshal(ids)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	must(t, err, "acquire request")
	req.Header.Set("Authorization", "Bearer "+queueToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err, "acquirejobs")
	defer resp.Body.Close()
	var out struct {
		Count int     `json:"count"`
		Value []int64 `json:"value"`
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("acquirejobs: %s", resp.Status)
	}
	must(t, json.NewDecoder(resp.Body).Decode(&out), "decode acquirejobs")
	if out.Count != len(out.Value) {
		t.Fatalf("acquirejobs count %d, value %v", out.Count, out.Value)
	}
	return out.Value
}
