package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
)

// An engine serving the seed runs no SQLite: the seed opens from its
// lexicon, and a scripted run on it (searches, reads, the answer) opens
// no connection. Under WebAssembly the first SQL statement sets V8
// compiling SQLite (docs/worker.md, "The cold round"); this fails if the
// seed is ever built again at Open, or a run starts using SQLite.
func TestTheSeedRunsNoSQLite(t *testing.T) {
	e, err := Open(Options{})
	require.NoError(t, err)
	defer e.Close()
	ix := e.lab.Library.Index()
	assert.False(t, ix.Connected(), "opening the engine")
	task, err := agent.TaskFromJSON("In Python 3.12, does Path.write_text append to an existing file or overwrite it?", "3.12", string(agent.Agent), nil)
	require.NoError(t, err)
	tr, err := e.Run(context.Background(), RunRequest{Task: task, Policy: Scripted})
	require.NoError(t, err)
	require.NotEmpty(t, tr.Result.Observations, "the run searched and read")
	assert.False(t, ix.Connected(), "a scripted run on the seed")
}
