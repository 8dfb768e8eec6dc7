package remote_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/remote"
)

// interruptingDoer sends requests with http.DefaultClient, calling
// interrupt first on the experiment's post: Ctrl-C landing while the post
// is in flight, after the server admitted it.
type interruptingDoer struct{ interrupt context.CancelFunc }

func (d interruptingDoer) Do(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/experiments" {
		d.interrupt()
	}
	return http.DefaultClient.Do(r)
}

// TestAnInterruptDuringThePostCancelsTheExperiment: an interrupt while the
// experiment's post is on its way does not lose the experiment the server
// admitted: the post's answer is read, the experiment cancelled by its id,
// and the error says so, for both kinds.
func TestAnInterruptDuringThePostCancelsTheExperiment(t *testing.T) {
	for _, tc := range []struct {
		kind string
		run  func(context.Context, *remote.Client) ([]byte, error)
	}{
		{"retrieval", func(ctx context.Context, c *remote.Client) ([]byte, error) {
			return c.Retrieval(ctx, remote.Retrieval{Corpus: "python-3.11"}, nil)
		}},
		{"agent", func(ctx context.Context, c *remote.Client) ([]byte, error) {
			return c.Eval(ctx, remote.Eval{Corpus: "python-3.11", Policy: "scripted"}, nil)
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			var mu sync.Mutex
			var kinds, cancels []string
			mux := http.NewServeMux()
			mux.HandleFunc("POST /v1/experiments", func(w http.ResponseWriter, r *http.Request) {
				var body struct{ Kind string }
				assert.NoError(t, json.NewDecoder(r.Body).Decode(&body))
				mu.Lock()
				kinds = append(kinds, body.Kind)
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusAccepted)
				_, _ = w.Write([]byte(`{"id": "exp_1", "kind": "` + body.Kind + `", "state": "queued", "progress": {"done": 0, "total": 78}}`))
			})
			mux.HandleFunc("POST /v1/experiments/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				cancels = append(cancels, r.PathValue("id"))
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"id": "` + r.PathValue("id") + `", "state": "cancelled"}`))
			})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			ctx, interrupt := context.WithCancel(context.Background())
			defer interrupt()
			c, err := remote.New(srv.URL, "rat_test", interruptingDoer{interrupt})
			require.NoError(t, err)

			_, err = tc.run(ctx, c)
			require.Error(t, err)
			assert.ErrorIs(t, err, context.Canceled)
			assert.Contains(t, err.Error(), "the server's experiment exp_1 is cancelled")
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []string{tc.kind}, kinds, "posted once, as its kind")
			assert.Equal(t, []string{"exp_1"}, cancels, "the admitted experiment cancelled by its id")
		})
	}
}
