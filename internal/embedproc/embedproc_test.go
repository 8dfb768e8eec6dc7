package embedproc_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/embedproc"
)

// TestMain makes the test binary a fake embedder when FAKE_EMBEDDER names
// a behaviour, so the protocol is tested without node.
func TestMain(m *testing.M) {
	if mode := os.Getenv("FAKE_EMBEDDER"); mode != "" {
		fakeEmbedder(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const readyLine = `{"ready": true, "model": {"id": "ragagent-test/fake", "revision": "1", "dimensions": 2, "pooling": "mean", "normalize": true,
 "files": [{"path": "onnx/model.onnx", "sha256": "` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `", "bytes": 3}], "runtime": {"device": "cpu"}}}`

func fakeEmbedder(mode string) {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	switch mode {
	case "refuse":
		fmt.Fprintln(out, `{"error": {"code": "invalid_model", "message": "onnx/model.onnx: sha256 mismatch"}}`)
		return
	case "noise":
		fmt.Fprintln(os.Stderr, "loading the model")
		fmt.Fprintln(out, "Hello from a library that prints")
		return
	}
	fmt.Fprintln(out, strings.ReplaceAll(readyLine, "\n", ""))
	out.Flush()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	n := 0
	for in.Scan() {
		n++
		var req struct {
			ID    int      `json:"id"`
			Query *string  `json:"query"`
			Texts []string `json:"texts"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(out, `{"id": null, "error": {"code": "invalid_request", "message": %q}}`+"\n", err.Error())
			out.Flush()
			continue
		}
		switch {
		case mode == "crash" && n == 2:
			fmt.Fprintln(os.Stderr, "RangeError: out of memory")
			os.Exit(3)
		case mode == "skew":
			req.ID++
		case mode == "hang" && n == 2:
			time.Sleep(time.Hour)
		case len(req.Texts) == 1 && req.Texts[0] == "refuse me":
			fmt.Fprintf(out, `{"id": %d, "error": {"code": "embed_failed", "message": "the text is too long"}}`+"\n", req.ID)
			out.Flush()
			continue
		}
		if req.Query != nil {
			scores := make([]float64, len(req.Texts))
			for i, t := range req.Texts {
				scores[i] = float64(len(t) - len(*req.Query))
			}
			b, _ := json.Marshal(scores)
			fmt.Fprintf(out, `{"id": %d, "scores": %s}`+"\n", req.ID, b)
			out.Flush()
			continue
		}
		raw := make([]byte, 0, 8*len(req.Texts))
		for _, t := range req.Texts {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(float32(len(t))))
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(1))
		}
		fmt.Fprintf(out, `{"id": %d, "dimensions": 2, "f32": %q}`+"\n", req.ID, base64.StdEncoding.EncodeToString(raw))
		out.Flush()
	}
}

func start(t *testing.T, mode string) (*embedproc.Process, error) {
	t.Helper()
	t.Setenv("FAKE_EMBEDDER", mode)
	exe, err := os.Executable()
	require.NoError(t, err)
	p, err := embedproc.Start(context.Background(), []string{exe})
	if p != nil {
		t.Cleanup(func() { p.Close() })
	}
	return p, err
}

func TestEmbedsInOrder(t *testing.T) {
	p, err := start(t, "good")
	require.NoError(t, err)
	assert.Equal(t, "ragagent-test/fake", p.Model().ID)
	assert.Equal(t, 2, p.Model().Dimensions)
	for i := 0; i < 3; i++ {
		got, err := p.Embed(context.Background(), []string{"a", "bbb", ""})
		require.NoError(t, err)
		assert.Equal(t, [][]float32{{1, 1}, {3, 1}, {0, 1}}, got)
	}
	got, err := p.Embed(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = p.Embed(context.Background(), []string{"refuse me"})
	assert.ErrorContains(t, err, "embed_failed: the text is too long")
	got, err = p.Embed(context.Background(), []string{"after a refusal"})
	require.NoError(t, err, "a refused request leaves the process working")
	assert.Equal(t, [][]float32{{15, 1}}, got)
	scores, err := p.Score(context.Background(), "ab", []string{"abcd", "a"})
	require.NoError(t, err)
	assert.Equal(t, []float64{2, -1}, scores, "a query makes it a cross-encoder's request")
	assert.NoError(t, p.Close())
}

func TestStartAndEmbedFailures(t *testing.T) {
	for _, tc := range []struct{ mode, says string }{
		{"refuse", "did not start: invalid_model: onnx/model.onnx: sha256 mismatch"},
		{"noise", `not the protocol's: "Hello from a library that prints"; it said: loading the model`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			_, err := start(t, tc.mode)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.says)
		})
	}
	t.Run("crash", func(t *testing.T) {
		p, err := start(t, "crash")
		require.NoError(t, err)
		_, err = p.Embed(context.Background(), []string{"x"})
		require.NoError(t, err)
		_, err = p.Embed(context.Background(), []string{"x"})
		assert.ErrorContains(t, err, "the model process stopped: it ended; it said: RangeError: out of memory")
		_, again := p.Embed(context.Background(), []string{"x"})
		assert.Equal(t, err, again, "a dead process says so again, without writing")
	})
	t.Run("skew", func(t *testing.T) {
		p, err := start(t, "skew")
		require.NoError(t, err)
		_, err = p.Embed(context.Background(), []string{"x"})
		assert.ErrorContains(t, err, "out of step: it answered request 2 to request 1")
	})
	t.Run("a cancelled request kills a hung child", func(t *testing.T) {
		p, err := start(t, "hang")
		require.NoError(t, err)
		_, err = p.Embed(context.Background(), []string{"x"})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err = p.Embed(ctx, []string{"x"})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("no command", func(t *testing.T) {
		_, err := embedproc.Start(context.Background(), []string{"/nonexistent/node"})
		assert.ErrorContains(t, err, "start /nonexistent/node")
	})
}
