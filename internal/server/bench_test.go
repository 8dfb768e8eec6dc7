package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/server/store"
)

// The server benchmarks are load scenarios (seconds each, one per run):
// `make bench-server` runs them with RAGAGENT_BENCH_SERVER=1; a plain
// `go test -bench .` skips them.
func scenario(b *testing.B) {
	if os.Getenv("RAGAGENT_BENCH_SERVER") == "" {
		b.Skip("a load scenario: run it with make bench-server")
	}
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// streamRun posts a streamed run and reads its events to the end: the time
// to the response headers (admission) and to the end event (completion),
// the run id, and the events received.
type streamed struct {
	status   int
	code     string
	id       string
	admitted time.Duration
	ended    time.Duration
	events   []sse
}

func streamRun(base, token, body string) (streamed, error) {
	var out streamed
	began := time.Now()
	hr, err := http.NewRequest("POST", base+"/v1/runs", strings.NewReader(body))
	if err != nil {
		return out, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	out.status, out.admitted = resp.StatusCode, time.Since(began)
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		data, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(data, &e)
		out.code = e.Error.Code
		return out, nil
	}
	out.id = strings.TrimPrefix(resp.Header.Get("Content-Location"), "/v1/runs/")
	out.events, err = readSSE(resp.Body, func(ev sse) bool { return ev.event == "end" })
	out.ended = time.Since(began)
	return out, err
}

// 200 concurrent clients each start a streamed scripted run (strategy
// enqueue) while a sampler reads the running counts: the counts never pass
// the caps, every admitted run ends exactly once, the database holds
// exactly the admitted runs; admission and completion latencies.
func BenchmarkServerLoad200Clients(b *testing.B) {
	scenario(b)
	const clients, tokens = 200, 50
	caps := storeCaps(16, 2, 200, 8)
	for range b.N {
		e := newEnv(b, options{caps: caps})
		var toks []string
		for i := range tokens {
			toks = append(toks, e.token(fmt.Sprint("t", i), []string{"read", "run"}, 100000, 1))
		}
		load0 := loadavg()
		sm := sample(e.store)
		results := make([]streamed, clients)
		errs := make([]error, clients)
		began := time.Now()
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = streamRun(e.http.URL, toks[i%tokens], `{`+overwrite+`, "stream": true, "strategy": "enqueue"}`)
			}()
		}
		wg.Wait()
		wall := time.Since(began)
		sm.halt()
		var admitted, completed []time.Duration
		refused := map[string]int{}
		ids := map[string]bool{}
		for i, r := range results {
			require.NoError(b, errs[i])
			if r.status != http.StatusOK {
				refused[r.code]++
				continue
			}
			require.False(b, ids[r.id], "run %s admitted twice", r.id)
			ids[r.id] = true
			admitted = append(admitted, r.admitted)
			completed = append(completed, r.ended)
			if last := r.events[len(r.events)-1].event; last != "end" {
				for _, line := range strings.Split(e.log.String(), "\n") {
					if strings.Contains(line, "fault") || strings.Contains(line, r.id) {
						b.Log(line)
					}
				}
				b.Fatalf("run %s: the stream ended after %q", r.id, last)
			}
		}
		stored := 0
		for _, tok := range toks {
			rs, err := e.store.Runs(context.Background(), strings.Split(tok, "_")[1], 0, 1000)
			require.NoError(b, err)
			for _, r := range rs {
				require.True(b, ids[r.ID], "run %s stored but not admitted", r.ID)
				require.NotContains(b, []string{store.Queued, store.Running}, r.Status)
				evs, err := e.store.Events(context.Background(), r.ID, 0, 1000)
				require.NoError(b, err)
				ends := 0
				for _, ev := range evs {
					if ev.Type == "end" {
						ends++
					}
				}
				require.Equal(b, 1, ends, "run %s", r.ID)
				stored++
			}
		}
		require.Equal(b, len(ids), stored, "no admitted run lost")
		require.LessOrEqual(b, sm.all.Load(), int64(caps.Running))
		require.LessOrEqual(b, sm.one.Load(), int64(caps.RunningPerToken))
		b.ReportMetric(float64(len(ids)), "admitted")
		b.ReportMetric(float64(clients-len(ids)), "refused")
		b.ReportMetric(float64(sm.all.Load()), "max-running")
		b.ReportMetric(float64(sm.one.Load()), "max-running/token")
		b.ReportMetric(ms(percentile(admitted, .5)), "admit-p50-ms")
		b.ReportMetric(ms(percentile(admitted, .99)), "admit-p99-ms")
		b.ReportMetric(ms(percentile(completed, .5)), "complete-p50-ms")
		b.ReportMetric(ms(percentile(completed, .99)), "complete-p99-ms")
		b.Logf("%d clients, %d tokens, caps %d running (%d per token), queue %d (%d per token): %d admitted, refused %v, %d samples, max running %d (per token %d); admission p50 %.1f ms p99 %.1f ms; completion p50 %.1f ms p99 %.1f ms; %d runs in %.2f s (%.0f runs/s); load average %s -> %s",
			clients, tokens, caps.Running, caps.RunningPerToken, caps.Queue, caps.QueuePerToken, len(ids), refused, sm.samples.Load(),
			sm.all.Load(), sm.one.Load(), ms(percentile(admitted, .5)), ms(percentile(admitted, .99)),
			ms(percentile(completed, .5)), ms(percentile(completed, .99)), len(ids), wall.Seconds(), float64(len(ids))/wall.Seconds(), load0, loadavg())
		e.close()
	}
}

// Cancel latency: a Gemini run waits on a model that never answers; the
// time from sending the cancel to reading the end event on the run's open
// stream (the in-flight request is aborted on the way).
func BenchmarkServerCancelToEndEvent(b *testing.B) {
	scenario(b)
	const runs = 50
	for range b.N {
		f := newFake(b, hanging())
		e := newEnv(b, options{endpoint: f.srv.URL})
		tok := e.token("alice", []string{"read", "run", "live"}, 100000, 1000)
		load0 := loadavg()
		var lat []time.Duration
		for range runs {
			before, _ := f.counts()
			hr, _ := http.NewRequest("POST", e.http.URL+"/v1/runs", strings.NewReader(`{`+overwrite+`, "policy": "gemini", "stream": true}`))
			hr.Header.Set("Content-Type", "application/json")
			hr.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(hr)
			require.NoError(b, err)
			id := strings.TrimPrefix(resp.Header.Get("Content-Location"), "/v1/runs/")
			_, err = readSSE(resp.Body, func(ev sse) bool { return ev.event == "started" })
			require.NoError(b, err)
			for got, _ := f.counts(); got == before; got, _ = f.counts() {
				time.Sleep(time.Millisecond)
			}
			ended := make(chan time.Time, 1)
			go func() {
				evs, _ := readSSE(resp.Body, func(ev sse) bool { return ev.event == "end" })
				if len(evs) > 0 && evs[len(evs)-1].event == "end" {
					ended <- time.Now()
				}
				close(ended)
			}()
			sent := time.Now()
			cr, _ := http.NewRequest("POST", e.http.URL+"/v1/runs/"+id+"/cancel", nil)
			cr.Header.Set("Authorization", "Bearer "+tok)
			cresp, err := http.DefaultClient.Do(cr)
			require.NoError(b, err)
			cresp.Body.Close()
			at, ok := <-ended
			require.True(b, ok, "the stream ended with the end event")
			lat = append(lat, at.Sub(sent))
			resp.Body.Close()
		}
		_, aborted := f.counts()
		b.ReportMetric(ms(percentile(lat, .5)), "cancel-p50-ms")
		b.ReportMetric(ms(percentile(lat, .99)), "cancel-p99-ms")
		b.Logf("%d cancels of in-flight Gemini runs: cancel -> end event p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d in-flight requests aborted; load average %s -> %s",
			runs, ms(percentile(lat, .5)), ms(percentile(lat, .99)), ms(percentile(lat, 1)), aborted, load0, loadavg())
		e.close()
	}
}

// kill -9 under load: the built ragagent serve-api runs Gemini runs (a
// slow fake model) for 60 streaming clients; it is killed mid-load and
// started again on the same database. Every run a client was told about
// is there and ends (interrupted if it was running, run if it was
// queued), and every event a client received is there, byte for byte.
func BenchmarkServerKill9Restart(b *testing.B) {
	scenario(b)
	const clients = 60
	dir := b.TempDir()
	bin := filepath.Join(dir, "ragagent")
	build := exec.Command("go", "build", "-o", bin, "github.com/ragagentlab/ragagent/cmd/ragagent")
	build.Stderr = os.Stderr
	require.NoError(b, build.Run())
	for range b.N {
		db := filepath.Join(dir, fmt.Sprintf("api-%d.db", time.Now().UnixNano()))
		env := append(os.Environ(), "RAGAGENT_TOKEN_PEPPER=a pepper for the benchmark", "GOOGLE_API_KEY="+dummyKey, "GEMINI_API_KEY=")
		add := exec.Command(bin, "tokens", "add", "--db", db, "--name", "bench", "--scopes", "read,run,live", "--daily-live-calls", "100000")
		add.Env = env
		out, err := add.Output()
		require.NoError(b, err)
		tok := strings.TrimSpace(string(out))
		f := newFake(b, slowPolicy(20*time.Millisecond))
		start := func() (*exec.Cmd, string, time.Duration) {
			began := time.Now()
			cmd := exec.Command(bin, "serve-api", "--db", db, "--addr", "127.0.0.1:0", "--endpoint", f.srv.URL,
				"--max-running", "8", "--max-running-per-token", "8", "--queue", "200", "--queue-per-token", "200")
			cmd.Env = env
			cmd.Stderr = io.Discard
			stdout, err := cmd.StdoutPipe()
			require.NoError(b, err)
			require.NoError(b, cmd.Start())
			line, err := bufio.NewReader(stdout).ReadString('\n')
			require.NoError(b, err)
			return cmd, strings.TrimSpace(line), time.Since(began)
		}
		cmd, base, _ := start()
		load0 := loadavg()
		type seen struct {
			id     string
			events []sse
		}
		results := make([]seen, clients)
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				hr, _ := http.NewRequest("POST", base+"/v1/runs", strings.NewReader(`{`+overwrite+`, "policy": "gemini", "stream": true, "strategy": "enqueue"}`))
				hr.Header.Set("Content-Type", "application/json")
				hr.Header.Set("Authorization", "Bearer "+tok)
				resp, err := http.DefaultClient.Do(hr)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return
				}
				results[i].id = strings.TrimPrefix(resp.Header.Get("Content-Location"), "/v1/runs/")
				results[i].events, _ = readSSE(resp.Body, func(ev sse) bool { return ev.event == "end" })
			}()
		}
		time.Sleep(1500 * time.Millisecond)
		require.NoError(b, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		wg.Wait()
		f.srv.CloseClientConnections()
		cmd, base, restart := start()
		accepted, received, lost, lostEvents, interrupted, resumed := 0, 0, 0, 0, 0, 0
		for _, r := range results {
			if r.id == "" {
				continue
			}
			accepted++
			received += len(r.events)
			run := awaitHTTP(b, base, tok, r.id)
			if run == nil {
				lost++
				continue
			}
			switch run["reason"] {
			case "interrupted":
				interrupted++
			default:
				resumed++
			}
			hr, _ := http.NewRequest("GET", base+"/v1/runs/"+r.id+"/events", nil)
			hr.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(hr)
			require.NoError(b, err)
			all, err := readSSE(resp.Body, func(ev sse) bool { return ev.event == "end" })
			resp.Body.Close()
			require.NoError(b, err)
			for i, ev := range r.events {
				if i >= len(all) || all[i] != ev {
					lostEvents++
				}
			}
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		require.Zero(b, lost, "no accepted run lost")
		require.Zero(b, lostEvents, "no received event lost")
		b.ReportMetric(float64(accepted), "accepted")
		b.ReportMetric(float64(received), "events-received")
		b.ReportMetric(float64(lost), "runs-lost")
		b.ReportMetric(float64(lostEvents), "events-lost")
		b.ReportMetric(ms(restart), "restart-ms")
		b.Logf("kill -9 after 1.5 s of %d streaming Gemini clients: %d runs accepted, %d events received; after restart (%.0f ms to serving): %d interrupted, %d ran to the end from the queue, %d runs lost, %d received events missing; load average %s -> %s",
			clients, accepted, received, ms(restart), interrupted, resumed, lost, lostEvents, load0, loadavg())
	}
}

// awaitHTTP polls a run over HTTP until it has finished (nil if it is not
// found).
func awaitHTTP(b *testing.B, base, tok, id string) map[string]any {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		hr, _ := http.NewRequest("GET", base+"/v1/runs/"+id, nil)
		hr.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(hr)
		require.NoError(b, err)
		var run map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&run)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil
		}
		if s := run["status"]; s != "queued" && s != "running" {
			return run
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("run %s did not finish after the restart", id)
	return nil
}
