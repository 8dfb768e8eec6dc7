package engine

import (
	"strings"

	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/retrieval"
)

// DefaultBuildConfig is the retrieval configuration `corpus build` names
// as a new pack's default: the best general one measured (docs/retrieval.md).
const DefaultBuildConfig = retrieval.General

// RetrievalConfigs are the built-in retrieval configurations, in `--list`
// order, seed first.
func RetrievalConfigs() []retrieval.Spec { return retrieval.Builtins() }

// ParseConfig reads a --config value: a built-in's name, or a
// configuration's JSON text (a file's contents; it begins with "{").
// Refusals are unknown_config and invalid_config.
func ParseConfig(text string) (retrieval.Spec, error) {
	if strings.HasPrefix(strings.TrimSpace(text), "{") {
		return retrieval.Parse([]byte(text))
	}
	return retrieval.Lookup(text)
}

// labUnder is the pack's lab under a configuration ("" is the pack's
// default).
func (e *Engine) labUnder(corpus, config string) (*lab.Lab, error) {
	l, err := e.labFor(corpus)
	if err != nil || config == "" {
		return l, err
	}
	spec, err := ParseConfig(config)
	if err != nil {
		return nil, err
	}
	return l.Under(spec)
}

// checkRecorded refuses, with config_mismatch, replaying a trial on lab l
// under a configuration chosen by name or spec (config) other than the one
// it was recorded under; with no choice the trial replays under its own.
func checkRecorded(l *lab.Lab, config string, t recording.Trial) error {
	if config == "" {
		return nil
	}
	want, err := ParseConfig(config)
	if err != nil {
		return err
	}
	got, err := l.Recorded(t.Retrieval)
	if err != nil {
		return err
	}
	if want.SHA256() != got.SHA256() {
		return reason.New(reason.ConfigMismatch, "trial %s was recorded under retrieval configuration %q; it cannot replay under %q (its searches would rank differently)", t.ID, got.Name, want.Name)
	}
	return nil
}

// CheckRecorded refuses a replay run whose trial cannot replay under the
// request's configuration on its pack (config_mismatch, or a recorded
// configuration neither this build nor the pack has), before anything
// runs: what Run would refuse it with, so a front end can refuse before it
// prints the run's header.
func (e *Engine) CheckRecorded(req RunRequest) error {
	if req.Policy != Replay || req.Trial == nil {
		return nil
	}
	l, err := e.labFor(req.Corpus)
	if err != nil {
		return err
	}
	if err := checkRecorded(l, req.Config, *req.Trial); err != nil {
		return err
	}
	_, err = l.Recorded(req.Trial.Retrieval)
	return err
}
