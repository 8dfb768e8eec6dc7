package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/builder"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/pyjson"
	"github.com/ragagentlab/ragagent/core/report"
)

// capture is inProcess that keeps each request body's system text.
type capture struct {
	inProcess
	mu      sync.Mutex
	systems []string
}

func (c *capture) Post(ctx context.Context, url string, body []byte) (int, []byte, error) {
	v, err := pyjson.Decode(string(body))
	if err == nil {
		o, _ := v.(*pyjson.Object)
		si, _ := o.Get("systemInstruction")
		parts, _ := si.(*pyjson.Object).Get("parts")
		text, _ := parts.([]any)[0].(*pyjson.Object).Get("text")
		c.mu.Lock()
		c.systems = append(c.systems, text.(string))
		c.mu.Unlock()
	}
	return c.inProcess.Post(ctx, url, body)
}

// kitchenPack is a tiny pack of someone's notes: not Python's documentation.
func kitchenPack(t *testing.T, title string) (manifest, passages []byte) {
	t.Helper()
	o := builder.Options{ID: "kitchen", Title: title, Language: "en", Version: "1.0", Licence: "mine", Attribution: "me",
		Source: "notes", MadeBy: "a test", BaseURL: "https://kitchen.invalid/"}
	res, err := builder.Build(twoNotes(), o, nil)
	require.NoError(t, err)
	passages, err = corpus.EncodeJSON(title, res.Passages)
	require.NoError(t, err)
	manifest, err = corpus.EncodeManifest(o.Manifest(res.Passages, passages, corpus.EncodingJSON, "passages.json", 0))
	require.NoError(t, err)
	return manifest, passages
}

// A pack that is not Python's documentation tells its model the same rules
// about its own subject, its title, and never that it answers Python
// documentation questions; its trials name the pack and that subject. The
// seed sends the reference text byte for byte, in both modes.
func TestEachPackTellsTheModelItsOwnSubject(t *testing.T) {
	e := open(t, 40)
	manifest, passages := kitchenPack(t, "Kettle and garden notes")
	_, err := e.LoadPack(manifest, passages)
	require.NoError(t, err)
	for _, mode := range []agent.Mode{agent.Agent, agent.Fixed} {
		tr := &capture{inProcess: inProcess{key: true}}
		task := agent.Task{Question: "How often should I descale the kettle?", Version: "1.0", Mode: mode, Limits: agent.DefaultLimits()}
		rep, err := e.Run(context.Background(), engine.RunRequest{Corpus: "kitchen", Task: task, Policy: engine.Gemini, Transport: tr})
		require.NoError(t, err)
		require.NotNil(t, rep.Result)
		require.NotEmpty(t, tr.systems)
		for _, s := range tr.systems {
			assert.Equal(t, agent.InstructionFor("Kettle and garden notes", mode), s)
			assert.Contains(t, s, `You answer questions about the documents titled "Kettle and garden notes" using ONLY tool observations.`)
			assert.NotContains(t, s, "Python")
		}
		assert.Equal(t, &report.CorpusRef{ID: "kitchen", Title: "Kettle and garden notes", Subject: "Kettle and garden notes"}, rep.Corpus)

		seed := &capture{inProcess: inProcess{key: true}}
		task = agent.Task{Question: "In Python 3.12, does Path.write_text append to an existing file or overwrite it?", Version: "3.12", Mode: mode, Limits: agent.DefaultLimits()}
		rep, err = e.Run(context.Background(), engine.RunRequest{Task: task, Policy: engine.Gemini, Transport: seed})
		require.NoError(t, err)
		require.NotEmpty(t, seed.systems)
		for _, s := range seed.systems {
			assert.Equal(t, agent.Instruction(mode), s, "the seed's text, byte for byte")
		}
		assert.Equal(t, "Python documentation", rep.Corpus.Subject)
	}
}
