package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/builder"
	"github.com/ragagentlab/ragagent/core/engine"
)

func twoNotes() []builder.Document {
	return []builder.Document{
		{Path: "notes/kettle.md", Data: []byte("# Kettle\n\nDescale the kettle with citric acid every month.\n")},
		{Path: "notes/garden.md", Data: []byte("# Garden\n\nWater the tomatoes at dawn, never at noon.\n")},
	}
}

// A person's files become the documents pack: searchable and runnable at
// once, each unreadable file left out with its reason, and a build with
// nothing readable refused without losing the pack built before.
func TestBuildPackFromDocuments(t *testing.T) {
	e := open(t, 0)
	var progress []int
	docs := append(twoNotes(),
		builder.Document{Path: "photo.png", Data: []byte{0x89, 'P', 'N', 'G'}},
		builder.Document{Path: "latin1.txt", Data: []byte("caf\xe9")},
		builder.Document{Path: "nul.md", Data: []byte("a\x00b")})
	res, err := e.BuildPack(engine.BuildRequest{Documents: docs, OnDocument: func(done, total int) { progress = append(progress, done*10+total) }})
	require.NoError(t, err)
	assert.Equal(t, []int{15, 25, 35, 45, 55}, progress, "one report per document")
	assert.Equal(t, 2, res.Documents)
	require.Len(t, res.Skipped, 3)
	reasons := map[string]string{}
	for _, s := range res.Skipped {
		reasons[s.Path] = s.Reason
	}
	assert.Contains(t, reasons["photo.png"], "by its extension")
	assert.Equal(t, "not UTF-8 text", reasons["latin1.txt"])
	assert.Equal(t, "binary (contains a NUL byte)", reasons["nul.md"])
	assert.Equal(t, engine.DocumentsPack, res.Info.Manifest.ID)
	assert.Equal(t, 2, res.Info.Manifest.Passages)

	hits, err := e.Search(engine.SearchRequest{Corpus: engine.DocumentsPack, Query: "how do I descale a kettle", Version: "1.0"})
	require.NoError(t, err)
	require.NotEmpty(t, hits.Hits)
	assert.Equal(t, "notes.kettle.kettle", hits.Hits[0].SourceID)
	assert.Equal(t, "https://your-documents.invalid/notes/kettle.md#kettle", hits.Hits[0].URL)
	p, err := e.Passage(engine.DocumentsPack, "notes.kettle.kettle")
	require.NoError(t, err)
	assert.Equal(t, "Descale the kettle with citric acid every month.", p.Text)

	// The kept files load again as they were built.
	again := open(t, 0)
	info, err := again.LoadPack([]byte(res.Manifest), []byte(res.Passages))
	require.NoError(t, err)
	assert.Equal(t, res.Info.Manifest, info.Manifest)

	// Nothing readable: refused, the pack built before still answers.
	none, err := e.BuildPack(engine.BuildRequest{Documents: []builder.Document{{Path: "photo.png", Data: []byte{1}}}})
	require.NoError(t, err)
	assert.Nil(t, none.Info, "nothing built")
	require.Len(t, none.Skipped, 1)
	assert.Equal(t, "photo.png", none.Skipped[0].Path)
	hits, err = e.Search(engine.SearchRequest{Corpus: engine.DocumentsPack, Query: "tomatoes", Version: "1.0"})
	require.NoError(t, err)
	assert.Equal(t, "notes.garden.garden", hits.Hits[0].SourceID)

	require.NoError(t, e.RemovePack(engine.DocumentsPack))
	_, err = e.Search(engine.SearchRequest{Corpus: engine.DocumentsPack, Query: "tomatoes"})
	assert.ErrorContains(t, err, `no corpus pack "documents"`)
	assert.ErrorContains(t, e.RemovePack(engine.SeedPack), "built in")
}

// The documents pack's bounds, in the order they are checked.
func TestBuildPackRefusals(t *testing.T) {
	e := open(t, 0)
	caps := e.Constants().Documents
	many := make([]builder.Document, caps.Files+1)
	for i := range many {
		many[i] = builder.Document{Path: "a.md", Data: []byte("a")}
	}
	big := []builder.Document{}
	for n := 0; n <= caps.TotalBytes; n += caps.FileBytes {
		big = append(big, builder.Document{Path: "big.txt", Data: []byte(strings.Repeat("a", caps.FileBytes))})
	}
	for _, c := range []struct {
		name string
		docs []builder.Document
		want string
	}{
		{"none", nil, "documents: no file given"},
		{"too many", many, "files; at most"},
		{"too large in all", big, "bytes in all; at most"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.BuildPack(engine.BuildRequest{Documents: c.docs})
			assert.ErrorContains(t, err, c.want)
		})
	}
}

// Listing the packs does not wait on a pack that is opening (the page's
// picker and the server list them while the Python pack takes a second to
// open), and a pack loaded while another opens is safe (go test -race:
// the open lab was written under the opening's lock and read under
// another).
func TestPacksListedWhileOneOpens(t *testing.T) {
	built, err := open(t, 0).BuildPack(engine.BuildRequest{Documents: twoNotes()})
	require.NoError(t, err)
	release := make(chan struct{})
	e, err := engine.Open(engine.Options{Packs: []engine.PackSource{{Manifest: []byte(built.Manifest),
		Passages: func() ([]byte, error) { <-release; return []byte(built.Passages), nil }}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })

	opened := make(chan error, 1)
	go func() {
		_, err := e.PackInfo(engine.DocumentsPack)
		opened <- err
	}()
	listed := make(chan []engine.PackSummary, 1)
	go func() {
		time.Sleep(20 * time.Millisecond) // the opening holds its lock by now
		listed <- e.Packs()
	}()
	select {
	case packs := <-listed:
		require.Len(t, packs, 2)
		assert.Equal(t, engine.DocumentsPack, packs[1].Manifest.ID)
		assert.False(t, packs[1].Open, "still opening")
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("Packs waited on the pack being opened")
	}
	close(release)
	require.NoError(t, <-opened)
	again, err := e.LoadPack([]byte(built.Manifest), []byte(built.Passages))
	require.NoError(t, err)
	assert.Equal(t, built.Info.Manifest, again.Manifest)
	assert.True(t, e.Packs()[1].Open)
}

// A live run over a pack exports its trace from that pack: replayed
// against the pack's index (the seed's would not issue its reads), each
// candidate with the pack's passage text.
func TestTraceOfARunOverAPack(t *testing.T) {
	e := open(t, 20)
	_, err := e.BuildPack(engine.BuildRequest{Documents: twoNotes()})
	require.NoError(t, err)
	task := agent.Task{Question: "How often should I descale the kettle?", Version: "1.0", Mode: agent.Agent, Limits: agent.DefaultLimits()}
	tr, err := e.Run(context.Background(), engine.RunRequest{Corpus: engine.DocumentsPack, Task: task, Policy: engine.Gemini, Transport: &inProcess{key: true}})
	require.NoError(t, err)
	require.NotNil(t, tr.Result)
	require.Positive(t, tr.Exchanges)

	out, err := e.ExportOTLP(context.Background(), engine.ExportRequest{Source: engine.SourceSession, Trial: tr.ID, Corpus: engine.DocumentsPack})
	require.NoError(t, err)
	assert.NotContains(t, string(out), "ragagent.refused")
	assert.NotContains(t, string(out), "replay_request_mismatch")
	assert.Contains(t, string(out), string(tr.Result.Reason))
	assert.Contains(t, string(out), "Descale the kettle with citric acid every month.", "the candidate's text, from the pack")
}

// A question set for your documents may name a target as the page shows
// it, the file's path and anchor ("notes/kettle.md#kettle"), and is ranked
// and graded as the same set naming the pack's full URL; a shipped pack
// (the seed) still takes absolute URLs only.
func TestADocumentsTargetAsThePageShowsIt(t *testing.T) {
	e := open(t, 0)
	_, err := e.BuildPack(engine.BuildRequest{Documents: twoNotes()})
	require.NoError(t, err)
	set := func(target string) string {
		return "id\tquestion\ttarget_urls\nkettle\tHow often should I descale the kettle?\t" + target + "\ngarden\tWhen should I water the tomatoes?\t" +
			strings.Replace(target, "kettle", "garden", 2) + "\n"
	}
	want, err := e.Retrieval(context.Background(), engine.RetrievalRequest{Corpus: engine.DocumentsPack, Cases: set(engine.DocumentsBaseURL + "notes/kettle.md#kettle")})
	require.NoError(t, err)
	require.Equal(t, 2, want.Answerable)
	require.Equal(t, 1.0, want.Configs[0].Metrics.Recall1.Value, "both notes ranked first by their full URLs")
	for _, c := range []struct{ name, target string }{
		{"path and anchor", "notes/kettle.md#kettle"},
		{"a leading slash", "/notes/kettle.md#kettle"},
		{"a leading ./", "./notes/kettle.md#kettle"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := e.Retrieval(context.Background(), engine.RetrievalRequest{Corpus: engine.DocumentsPack, Cases: set(c.target)})
			require.NoError(t, err)
			assert.Equal(t, want.Configs, got.Configs)
			ev, err := e.Eval(context.Background(), engine.EvalRequest{Corpus: engine.DocumentsPack, Cases: []byte(set(c.target)), Policy: engine.Scripted})
			require.NoError(t, err)
			assert.Equal(t, 2, ev.Summary.Answerable)
			qs, err := e.ParseQuestionSet(engine.DocumentsPack, set(c.target))
			require.NoError(t, err)
			assert.Equal(t, []string{engine.DocumentsBaseURL + "notes/kettle.md#kettle"}, qs[0].TargetURLs)
		})
	}
	_, err = e.Retrieval(context.Background(), engine.RetrievalRequest{Corpus: engine.SeedPack, Cases: set("library/json.html#json.dumps")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not an absolute https URL")
}
