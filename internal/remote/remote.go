// Package remote runs the command line's experiments on a team's server
// (`ragagent serve-api`, or the server edition on Workers) through the
// client generated from api/openapi.json (internal/apiclient), so a CI job
// that gates on `ragagent retrieval --min`, or reads `ragagent eval
// --json`, can run on the shared server's packs and get what a local run
// would print.
//
// It polls an experiment rather than following its event stream: the
// generated client reads a response whole, and a poll a few times a second
// is as honest a progress line as the stream for an experiment of minutes.
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/internal/apiclient"
)

// postTimeout bounds the post of an experiment, which an interrupt does
// not cut off (Client.experiment).
const postTimeout = 10 * time.Second

// Client is a server and the token its requests carry.
type Client struct {
	api   *apiclient.ClientWithResponses
	base  string
	sleep func(ctx context.Context, d time.Duration) error
}

// New is a client of the server at base (an http or https URL without a
// query or fragment) sending token as its bearer. The token is never put
// into an error: a refused request names the server's code and message
// alone.
func New(base, token string, doer apiclient.HttpRequestDoer) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("--server %q is not an http(s) URL of a server (such as https://ragagent.example.com)", base)
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return nil, errors.New("no token: put the server's token in a file and give --token-file FILE, or set RAGAGENT_TOKEN")
	}
	if strings.ContainsAny(token, " \t\r\n") {
		return nil, errors.New("the token holds white space inside it: is the token file the one `ragagent tokens add` printed?")
	}
	bearer := func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
	opts := []apiclient.ClientOption{apiclient.WithRequestEditorFn(bearer)}
	if doer != nil {
		opts = append(opts, apiclient.WithHTTPClient(doer))
	}
	base = strings.TrimSuffix(base, "/")
	c, err := apiclient.NewClientWithResponses(base, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{api: c, base: base, sleep: sleepCtx}, nil
}

// Retrieval is the body of POST /v1/experiments for `ragagent retrieval`:
// the corpus the server holds, the question set as a ragagent-cases/1
// object (nil: the pack's own), the configurations (names or spec
// objects) and k.
type Retrieval struct {
	Corpus  string            `json:"corpus"`
	Cases   json.RawMessage   `json:"cases,omitempty"`
	Configs []json.RawMessage `json:"configs,omitempty"`
	K       int               `json:"k,omitempty"`
}

// Eval is the body of POST /v1/experiments for `ragagent eval`: the
// corpus the server holds, the question set as a ragagent-cases/1 object
// (nil: the pack's own), the configuration (a name or a spec object; nil:
// the pack's default) and the policy (the server runs scripted alone).
type Eval struct {
	Corpus string          `json:"corpus"`
	Cases  json.RawMessage `json:"cases,omitempty"`
	Config json.RawMessage `json:"config,omitempty"`
	Policy string          `json:"policy,omitempty"`
}

// Progress is an experiment's rankings (or trials) kept of those it makes.
type Progress func(done, total int)

// Retrieval runs the experiment on the server and returns its result's
// bytes (GET /v1/experiments/{id}/result: what `ragagent retrieval
// --json` prints for the same inputs). Cancelling ctx cancels the
// experiment on the server before returning.
func (c *Client) Retrieval(ctx context.Context, req Retrieval, progress Progress) ([]byte, error) {
	return c.experiment(ctx, struct {
		Kind string `json:"kind"`
		Retrieval
	}{"retrieval", req}, progress)
}

// Eval runs the agent experiment on the server and returns its result's
// bytes: what `ragagent eval --json` prints for the same inputs, its
// measured seconds aside. Progress counts trials. Cancelling ctx cancels
// the experiment on the server before returning.
func (c *Client) Eval(ctx context.Context, req Eval, progress Progress) ([]byte, error) {
	return c.experiment(ctx, struct {
		Kind string `json:"kind"`
		Eval
	}{"agent", req}, progress)
}

// experiment posts the experiment request, polls it to its end, reporting
// progress as it changes, and returns its result's bytes; every kind
// follows this one path, so a retrieval and an agent experiment are
// created, followed and cancelled alike.
func (c *Client) experiment(ctx context.Context, request any, progress Progress) ([]byte, error) {
	body, err := json.Marshal(request)
	if err != nil {
		return nil, err
	}
	// The post is not cut off by ctx: the server may have admitted the
	// experiment before its answer arrives, and one whose id never came
	// back would run on unseen. Once the id is here an ended ctx cancels it.
	post, stop := context.WithTimeout(context.WithoutCancel(ctx), postTimeout)
	created, err := c.api.CreateExperimentWithBodyWithResponse(post, "application/json", bytes.NewReader(body))
	stop()
	if err != nil {
		return nil, c.unreachable(err)
	}
	if created.JSON202 == nil {
		return nil, refusal(created.HTTPResponse, created.Body)
	}
	id := created.JSON202.Id
	if ctx.Err() != nil {
		return nil, c.cancel(id, ctx.Err())
	}
	wait := 100 * time.Millisecond
	last := -1
	for {
		got, err := c.api.GetExperimentWithResponse(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return nil, c.cancel(id, ctx.Err())
			}
			return nil, c.unreachable(err)
		}
		if got.JSON200 == nil {
			return nil, refusal(got.HTTPResponse, got.Body)
		}
		x := got.JSON200
		if progress != nil && x.Progress.Done != last {
			last = x.Progress.Done
			progress(x.Progress.Done, x.Progress.Total)
		}
		switch x.State {
		case apiclient.ExperimentStateSucceeded:
			res, err := c.api.GetExperimentResultWithResponse(ctx, id)
			if err != nil {
				return nil, c.unreachable(err)
			}
			if res.HTTPResponse == nil || res.HTTPResponse.StatusCode != http.StatusOK {
				return nil, refusal(res.HTTPResponse, res.Body)
			}
			return res.Body, nil
		case apiclient.ExperimentStateFailed:
			if x.Error != nil {
				return nil, reason.New(reason.Code(x.Error.Code), "%s", x.Error.Message)
			}
			return nil, fmt.Errorf("the server's experiment %s failed without saying why", id)
		case apiclient.ExperimentStateCancelled:
			return nil, reason.New(reason.Cancelled, "the server's experiment %s was cancelled", id)
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, c.cancel(id, err)
		}
		wait = min(wait*2, time.Second)
	}
}

// cancel asks the server to cancel the experiment id (on a context of its
// own: ctx has ended) and returns cause, saying whether it was.
func (c *Client) cancel(id string, cause error) error {
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	res, err := c.api.CancelExperimentWithResponse(ctx, id)
	if err != nil || res.HTTPResponse == nil || res.HTTPResponse.StatusCode >= 300 {
		return fmt.Errorf("%w (the server's experiment %s may still run: POST %s/v1/experiments/%s/cancel)", cause, id, c.base, id)
	}
	return fmt.Errorf("%w (the server's experiment %s is cancelled)", cause, id)
}

// unreachable is a transport error, named by the server's address only.
func (c *Client) unreachable(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("the server %s: %v", c.base, err)
}

// refusal is a response other than the one wanted: the server's
// {"error": {"code", "message"}} as a coded error, or its status.
func refusal(r *http.Response, body []byte) error {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Code != "" {
		return reason.New(reason.Code(e.Error.Code), "%s", e.Error.Message)
	}
	status := "no response"
	if r != nil {
		status = r.Status
	}
	return fmt.Errorf("the server answered %s, not an experiment", status)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
