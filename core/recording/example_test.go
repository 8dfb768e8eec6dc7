package recording_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/tools"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

// Example replays one trial of the bundled live comparison offline: a
// Replayer stands in for Gemini and hands out the recorded replies, in
// order, only while each request the controller builds equals the recorded
// one as a JSON value. Run with the recorded inputs, the trial ends as it
// did live. Run with one input changed (here the read allowance, which the
// model sees in its state), the first request already differs, and the run
// fails with replay_request_mismatch, naming where the two requests differ.
func Example() {
	file, err := recording.Parse(recordings.AgentComparison)
	if err != nil {
		log.Fatal(err)
	}
	snap, err := corpus.Parse(fixtures.Snapshot)
	if err != nil {
		log.Fatal(err)
	}
	lib, err := tools.Open(snap)
	if err != nil {
		log.Fatal(err)
	}
	defer lib.Close()

	trial := file.Trials[1]
	task, err := agent.TaskFromJSON(trial.Question, trial.Version, trial.Mode, trial.Limits)
	if err != nil {
		log.Fatal(err)
	}
	replay := func(task agent.Task) *agent.Result {
		ctrl := agent.Controller{Tools: lib, Model: recording.NewReplayer(trial)}
		res, err := ctrl.Run(context.Background(), task)
		if err != nil {
			log.Fatal(err)
		}
		return res
	}

	res := replay(task)
	fmt.Println(trial.ID, "with its recorded inputs:")
	for _, s := range res.Steps {
		fmt.Printf("%d %s %q -> %s\n", s.Call, s.Action, s.Argument, s.Outcome)
	}
	fmt.Println(res.Status, res.Reason)

	task.Limits.Reads = 3
	res = replay(task)
	fmt.Println(trial.ID, "with a read allowance of 3, not 4:")
	fmt.Println(res.Status, res.Reason)
	fmt.Println(res.Detail)
	// Output:
	// overwrite-agent-1 with its recorded inputs:
	// 1 search "Path.write_text" -> admitted
	// 2 read "path-write" -> admitted
	// 3 answer "" -> finished
	// answered citation_contract_passed
	// overwrite-agent-1 with a read allowance of 3, not 4:
	// failed replay_request_mismatch
	// trial overwrite-agent-1, exchange 1: the request differs at $.contents[0].parts[0].text (character 39): this run sent …" \"reads\": 3, \"searches\": 3, \"seconds\": 1"…, the recording has …" \"reads\": 4, \"searches\": 3, \"seconds\": 1"…
}
