// Package scalesetclient checks the local cloud's runner scale-set API against GitHub's own Go
// client, github.com/actions/scaleset (the client actions-runner-controller uses): every call
// the client makes must be accepted, every message it reads must decode, and its own listener
// (listener.Run) must see the demand and run the jobs, in both of the stand-in's assignment flows
// (the service assigns, as on github.com; the listener acquires, as on GitHub Enterprise Server).
// A stand-in that only runpool's own tests talk to could drift from the real API unnoticed; this
// client cannot.
package scalesetclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/actions/scaleset"
	"github.com/actions/scaleset/listener"
)

const (
	pat      = "ghp_scaleset_client_check"
	owner    = "acme"
	setName  = "rp-scaleset"
	capacity = 2 // the listener's MaxRunners: X-ScaleSetMaxCapacity
	jobCount = 3 // one more than the capacity
)

type job struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"`
}

func TestScaleSetClientAgainstTheStandIn(t *testing.T) {
	// "service": github.com's flow, the stand-in's default; "acquire": GitHub Enterprise Server's.
	for _, flow := range []string{"service", "acquire"} {
		t.Run(flow, func(t *testing.T) { checkFlow(t, flow) })
	}
}

func checkFlow(t *testing.T, flow string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	lc := startLocalCloud(t)
	lc.control(t, "POST", "/settings", map[string]any{"scaleSetPollMs": 1000, "scaleSetAssignTimeoutMs": 30000, "pollMs": 500, "scaleSetAssignment": flow}, nil)
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

	runListener(ctx, t, lc, client, sess, set, flow)

	// JIT configs and runner lookups beside the listener's.
	jit, err := client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: "rp-runner-1", WorkFolder: "_work"}, set.ID)
	must(t, err, "GenerateJitRunnerConfig")
	if jit.Runner == nil || jit.Runner.Name != "rp-runner-1" || jit.Runner.RunnerScaleSetID != set.ID || jit.EncodedJITConfig == "" {
		t.Fatalf("JIT config: %+v", jit)
	}
	if _, err := client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: "rp-runner-1"}, set.ID); !errors.Is(err, scaleset.RunnerExistsError) {
		t.Fatalf("a taken runner name: %v, want RunnerExistsError", err)
	}
	ref, err := client.GetRunner(ctx, jit.Runner.ID)
	must(t, err, "GetRunner")
	named, err := client.GetRunnerByName(ctx, "rp-runner-1")
	must(t, err, "GetRunnerByName")
	none, err := client.GetRunnerByName(ctx, "nobody")
	must(t, err, "GetRunnerByName(absent)")
	if ref.Name != "rp-runner-1" || ref.RunnerScaleSetID != set.ID || named == nil || named.ID != jit.Runner.ID || none != nil {
		t.Fatalf("runner lookups: %+v %+v %+v", ref, named, none)
	}
	// A 429 with Retry-After on a lookup is absorbed by the client's retries.
	lc.control(t, "POST", "/scalesets/faults", map[string]any{"operation": "getRunner", "status": 429, "retryAfterSeconds": 1}, nil)
	_, err = client.GetRunner(ctx, jit.Runner.ID)
	must(t, err, "GetRunner after a 429")
	// Remove a runner that never ran; removing it again is fine too.
	must(t, client.RemoveRunner(ctx, int64(jit.Runner.ID)), "RemoveRunner")
	must(t, client.RemoveRunner(ctx, int64(jit.Runner.ID)), "RemoveRunner again")
	if r, err := client.GetRunnerByName(ctx, "rp-runner-1"); err != nil || r != nil {
		t.Fatalf("a removed runner: %+v %v", r, err)
	}

	// A 200 with an empty body (seen in an outage) is a decode error for the client.
	lc.control(t, "POST", "/scalesets/faults", map[string]any{"operation": "getMessage", "status": "empty"}, nil)
	if _, err := sess.GetMessage(ctx, 0, capacity); err == nil {
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

// runListener runs GitHub's listener (listener.Run, MaxRunners = capacity) on the session with a
// recording scaler, queues one job more than the capacity, and checks that every job ran on a
// runner the scaler started, that the service never assigned more than the capacity, and that a
// queue token expiring mid-run is refreshed. In the acquire flow the jobs run only if the listener
// acquires them (a job the stand-in offers stays available until acquired).
func runListener(ctx context.Context, t *testing.T, lc *localCloud, client *scaleset.Client, sess *scaleset.MessageSessionClient, set *scaleset.RunnerScaleSet, flow string) {
	t.Helper()
	scaler := newRecordingScaler(t, lc, client, set.ID, capacity)
	l, err := listener.New(sess, listener.Config{ScaleSetID: set.ID, MaxRunners: capacity}, listener.WithMetricsRecorder(scaler))
	must(t, err, "listener.New")
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- l.Run(runCtx, scaler) }()

	var jobs []job
	for i := range jobCount {
		var j job
		lc.control(t, "POST", "/jobs", map[string]any{"labels": []string{setName}, "owner": owner, "repo": "app", "name": fmt.Sprintf("job-%d", i), "durationMs": 500}, &j)
		jobs = append(jobs, j)
	}

	// Mid-run, the queue token expires: the listener's poll gets 401, the client refreshes the
	// session (PATCH) and polls again.
	before := sess.Session().MessageQueueAccessToken
	lc.control(t, "POST", fmt.Sprintf("/scalesets/%d/expire-queue-token", set.ID), nil, nil)

	deadline := time.Now().Add(60 * time.Second)
	for {
		_, started, completed, _ := scaler.snapshot()
		if len(started) == jobCount && len(completed) == jobCount {
			break
		}
		select {
		case err := <-ran:
			t.Fatalf("the listener stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			desired, _, _, stats := scaler.snapshot()
			t.Fatalf("%s flow: %d started, %d completed of %d jobs in 60 s; desired counts %v; last statistics %+v", flow, len(started), len(completed), jobCount, desired, stats[len(stats)-1])
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	if err := <-ran; !errors.Is(err, context.Canceled) {
		t.Fatalf("the listener ended with %v, want the cancellation", err)
	}
	if sess.Session().MessageQueueAccessToken == before {
		t.Fatal("the session was not refreshed after a 401")
	}

	desired, started, completed, stats := scaler.snapshot()
	full := false
	for _, s := range stats {
		if s.TotalAssignedJobs > capacity {
			t.Fatalf("%s flow: %d jobs assigned, the listener's capacity is %d: %+v", flow, s.TotalAssignedJobs, capacity, s)
		}
		if s.TotalAssignedJobs == capacity && s.TotalAvailableJobs > 0 {
			full = true
		}
	}
	if !full {
		t.Fatalf("%s flow: never %d assigned with a job waiting: %+v", flow, capacity, stats)
	}
	for _, d := range desired {
		if d > capacity {
			t.Fatalf("desired counts %v above the capacity", desired)
		}
	}
	ids := map[int64]bool{}
	for _, j := range jobs {
		ids[j.ID] = true
	}
	for _, s := range started {
		if !ids[s.RunnerRequestID] || s.RunnerID == 0 || !strings.HasPrefix(s.RunnerName, "rp-listener-") || s.RunnerAssignTime.IsZero() ||
			s.OwnerName != owner || s.RepositoryName != "app" || s.QueueTime.IsZero() || s.ScaleSetAssignTime.IsZero() ||
			len(s.RequestLabels) != 1 || s.RequestLabels[0] != setName || s.JobID == "" || s.WorkflowRunID == 0 ||
			!strings.HasPrefix(s.JobWorkflowRef, owner+"/app/.github/workflows/") || s.EventName == "" {
			t.Fatalf("JobStarted: %+v", s)
		}
	}
	for _, c := range completed {
		if !ids[c.RunnerRequestID] || c.Result != "succeeded" || c.FinishTime.IsZero() || c.RunnerID == 0 || !strings.HasPrefix(c.RunnerName, "rp-listener-") {
			t.Fatalf("JobCompleted: %+v", c)
		}
		delete(ids, c.RunnerRequestID)
	}
	if len(ids) != 0 {
		t.Fatalf("jobs never completed: %v", ids)
	}
	// The ephemeral runners are gone once their job is done.
	for _, c := range completed {
		if _, err := client.GetRunner(ctx, c.RunnerID); !errors.Is(err, scaleset.RunnerNotFoundError) {
			t.Fatalf("a finished JIT runner: %v, want RunnerNotFoundError", err)
		}
	}
	if s := stats[len(stats)-1]; s.TotalAssignedJobs != 0 || s.TotalRunningJobs != 0 {
		t.Fatalf("statistics after the jobs: %+v", s)
	}
}
