package scalesetclient

// A scaler for GitHub's own listener (github.com/actions/scaleset/listener): it keeps as many
// ephemeral JIT runners (the local cloud's runner stand-in) as the listener's desired count, at
// most its maximum, as the client's example scaler does, and records what the listener told it.
// It is also the listener's metrics recorder, so it sees every statistics the service sent.

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/actions/scaleset"
)

type recordingScaler struct {
	t      *testing.T
	lc     *localCloud
	client *scaleset.Client
	setID  int
	max    int

	mu         sync.Mutex
	runners    map[string]*jitRunner // started, job not yet completed
	launched   int
	desired    []int // every count the listener handed over
	started    []*scaleset.JobStarted
	completed  []*scaleset.JobCompleted
	statistics []scaleset.RunnerScaleSetStatistic
}

func newRecordingScaler(t *testing.T, lc *localCloud, client *scaleset.Client, setID, max int) *recordingScaler {
	return &recordingScaler{t: t, lc: lc, client: client, setID: setID, max: max, runners: map[string]*jitRunner{}}
}

// HandleDesiredRunnerCount: count is the service's totalAssignedJobs; runners are added up to
// min(max, count). Scaling down is left to the runners' ends (they are ephemeral).
func (s *recordingScaler) HandleDesiredRunnerCount(ctx context.Context, count int) (int, error) {
	s.mu.Lock()
	s.desired = append(s.desired, count)
	target := min(s.max, count)
	missing := target - len(s.runners)
	s.mu.Unlock()
	for range missing {
		s.mu.Lock()
		s.launched++
		name := fmt.Sprintf("rp-listener-%d-%d", s.setID, s.launched)
		s.mu.Unlock()
		jit, err := s.client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: name, WorkFolder: "_work"}, s.setID)
		if err != nil {
			return 0, fmt.Errorf("JIT config for %s: %w", name, err)
		}
		r, err := s.lc.launchJitRunner(s.t, name, jit.EncodedJITConfig)
		if err != nil {
			return 0, err
		}
		s.mu.Lock()
		s.runners[name] = r
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runners), nil
}

func (s *recordingScaler) HandleJobStarted(ctx context.Context, j *scaleset.JobStarted) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = append(s.started, j)
	return nil
}

// HandleJobCompleted: the job's runner (if one ran it) is done; it exits on its own.
func (s *recordingScaler) HandleJobCompleted(ctx context.Context, j *scaleset.JobCompleted) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.completed = append(s.completed, j)
	delete(s.runners, j.RunnerName)
	return nil
}

// The listener's MetricsRecorder: the statistics are what the capacity checks read.
func (s *recordingScaler) RecordStatistics(st *scaleset.RunnerScaleSetStatistic) {
	if st == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statistics = append(s.statistics, *st)
}
func (s *recordingScaler) RecordJobStarted(*scaleset.JobStarted)     {}
func (s *recordingScaler) RecordJobCompleted(*scaleset.JobCompleted) {}
func (s *recordingScaler) RecordDesiredRunners(int)                  {}

// snapshot: copies of what was recorded so far.
func (s *recordingScaler) snapshot() (desired []int, started []*scaleset.JobStarted, completed []*scaleset.JobCompleted, stats []scaleset.RunnerScaleSetStatistic) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.desired...), append([]*scaleset.JobStarted(nil), s.started...),
		append([]*scaleset.JobCompleted(nil), s.completed...), append([]scaleset.RunnerScaleSetStatistic(nil), s.statistics...)
}
