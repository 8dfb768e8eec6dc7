package server_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3/driver"
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
		if out.code == "" {
			// Not the API's refusal: say what answered instead.
			out.code = fmt.Sprintf("%d %.80q", resp.StatusCode, data)
		}
		return out, nil
	}
	out.id = strings.TrimPrefix(resp.Header.Get("Content-Location"), "/v1/runs/")
	out.events, err = readSSE(resp.Body, func(ev sse) bool { return ev.event == "end" })
	out.ended = time.Since(began)
	return out, err
}

// loadCaps are the caps of both load scenarios (native and Worker).
var loadCaps = storeCaps(16, 2, 200, 8)

// loadTarget is a server the load scenario runs against: its URL, its
// tokens (rag_<id>_<secret>), its caps and a read-only connection to its
// database file (the native server's SQLite file, or the local Worker's
// D1 file, which workerd keeps in WAL mode under SQLite's own file locks),
// through which the scenario samples the running counts and checks every
// stored run. log is the server's log, shown when a run goes wrong.
type loadTarget struct {
	base   string
	tokens []string
	caps   store.Caps
	db     *sql.DB
	log    func() string
	// prior are the runs of the rounds before this one on the same
	// database, left out of this round's checks.
	prior map[string]bool
}

// openReadOnly opens a server's SQLite database for reading beside it.
func openReadOnly(b *testing.B, path string) *sql.DB {
	db, err := driver.Open((&url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro&_pragma=busy_timeout(10000)"}).String(), nil)
	require.NoError(b, err)
	require.NoError(b, db.Ping())
	b.Cleanup(func() { db.Close() })
	return db
}

// runningCounts reads how many runs are running, in all and for the token
// with the most, straight from the runs table.
func runningCounts(db *sql.DB) func(context.Context) (store.Counts, error) {
	return func(ctx context.Context) (store.Counts, error) {
		var c store.Counts
		err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM runs WHERE status = 'running'),
			(SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM runs WHERE status = 'running' GROUP BY token_id))`).
			Scan(&c.Running, &c.MostRunningPerToken)
		return c, err
	}
}

// loadFigures are what one load scenario measured.
type loadFigures struct {
	clients, admitted, samples int
	refused                    map[string]int
	maxRunning, maxPerToken    int64
	admit, complete            [2]time.Duration // p50, p99
	wall                       time.Duration
	load0, load1               string
}

// load runs the load scenario: clients concurrent clients (tokens taken in
// turn) each start a streamed scripted run (strategy enqueue) while a
// sampler reads the running counts. It fails unless the counts never pass
// the caps, every admitted run's stream ends with its end event, no run is
// admitted twice, and the database holds exactly the admitted runs, each
// finished with one end event. It reports the figures as the benchmark's
// metrics and in its log.
func load(b *testing.B, t loadTarget, clients int) loadFigures {
	f := loadFigures{clients: clients, refused: map[string]int{}, load0: loadavg()}
	sm := sampleCounts(runningCounts(t.db))
	results := make([]streamed, clients)
	errs := make([]error, clients)
	began := time.Now()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = streamRun(t.base, t.tokens[i%len(t.tokens)], `{`+overwrite+`, "stream": true, "strategy": "enqueue"}`)
		}()
	}
	wg.Wait()
	f.wall = time.Since(began)
	sm.halt()
	var admitted, completed []time.Duration
	ids := map[string]bool{}
	for i, r := range results {
		require.NoError(b, errs[i], "client %d", i)
		if r.status != http.StatusOK {
			f.refused[r.code]++
			continue
		}
		require.False(b, ids[r.id], "run %s admitted twice", r.id)
		ids[r.id] = true
		admitted = append(admitted, r.admitted)
		completed = append(completed, r.ended)
		if last := r.events[len(r.events)-1].event; last != "end" {
			for _, line := range strings.Split(t.log(), "\n") {
				if strings.Contains(line, "fault") || strings.Contains(line, r.id) {
					b.Log(line)
				}
			}
			b.Fatalf("run %s: the stream ended after %q", r.id, last)
		}
	}
	stored := 0
	rows, err := t.db.Query(`SELECT r.id, r.status, (SELECT count(*) FROM events e WHERE e.run_id = r.id AND e.type = 'end') FROM runs r`)
	require.NoError(b, err)
	for rows.Next() {
		var id, status string
		var ends int
		require.NoError(b, rows.Scan(&id, &status, &ends))
		if t.prior[id] {
			continue
		}
		require.True(b, ids[id], "run %s stored but not admitted", id)
		require.NotContains(b, []string{store.Queued, store.Running}, status, "run %s", id)
		require.Equal(b, 1, ends, "run %s has one end event", id)
		stored++
	}
	require.NoError(b, rows.Err())
	require.Equal(b, len(ids), stored, "no admitted run lost")
	for id := range ids {
		t.prior[id] = true
	}
	require.Positive(b, sm.samples.Load(), "the running counts were sampled")
	require.LessOrEqual(b, sm.all.Load(), int64(t.caps.Running), "running runs never pass the global cap")
	require.LessOrEqual(b, sm.one.Load(), int64(t.caps.RunningPerToken), "a token's running runs never pass its cap")
	f.admitted, f.samples, f.maxRunning, f.maxPerToken = len(ids), int(sm.samples.Load()), sm.all.Load(), sm.one.Load()
	f.admit = [2]time.Duration{percentile(admitted, .5), percentile(admitted, .99)}
	f.complete = [2]time.Duration{percentile(completed, .5), percentile(completed, .99)}
	f.load1 = loadavg()
	b.ReportMetric(float64(f.admitted), "admitted")
	b.ReportMetric(float64(clients-f.admitted), "refused")
	b.ReportMetric(float64(f.maxRunning), "max-running")
	b.ReportMetric(float64(f.maxPerToken), "max-running/token")
	b.ReportMetric(ms(f.admit[0]), "admit-p50-ms")
	b.ReportMetric(ms(f.admit[1]), "admit-p99-ms")
	b.ReportMetric(ms(f.complete[0]), "complete-p50-ms")
	b.ReportMetric(ms(f.complete[1]), "complete-p99-ms")
	b.Logf("%d clients, %d tokens, caps %d running (%d per token), queue %d (%d per token): %d admitted, refused %v, %d samples, max running %d (per token %d); admission p50 %.1f ms p99 %.1f ms; completion p50 %.1f ms p99 %.1f ms; %d runs in %.2f s (%.1f runs/s); load average %s -> %s",
		clients, len(t.tokens), t.caps.Running, t.caps.RunningPerToken, t.caps.Queue, t.caps.QueuePerToken, f.admitted, f.refused, f.samples,
		f.maxRunning, f.maxPerToken, ms(f.admit[0]), ms(f.admit[1]), ms(f.complete[0]), ms(f.complete[1]),
		f.admitted, f.wall.Seconds(), float64(f.admitted)/f.wall.Seconds(), f.load0, f.load1)
	return f
}

// 200 concurrent clients of 50 tokens start streamed scripted runs under
// the same caps against the native server, then against the local Worker
// under wrangler dev --local, then against the same Worker in workerd
// alone (no wrangler dev: its proxy worker and its debugger session out of
// the path; see startWorkerVia), each with a fresh database: the load
// scenario (load) on each, its guarantees checked and its figures reported
// side by side. Each target takes the scenario twice in a row (a second
// round on the same database, the first's runs left out of its checks):
// the first round of a Worker includes compiling its WebAssembly and V8's
// tiering up of the hot functions, the second is the isolate warm, as a
// Worker serving traffic is. For each Worker it logs its processes' CPU
// time per run (workerd, and wrangler's node and proxy workerd when they
// are there) and, as the ceiling of that path, the rate of GET /healthz
// (answered by the front program, no D1) through the same port.
func BenchmarkServerLoad200Clients(b *testing.B) {
	scenario(b)
	const clients, tokens, rounds = 200, 50, 3
	// Each target's rounds, in order, for the side-by-side summary.
	rates := map[string][]loadFigures{}
	defer func() { b.Log(sideBySide(rates, "native", "worker", "workerd")) }()
	b.Run("native", func(b *testing.B) {
		for range b.N {
			e := newEnv(b, options{caps: loadCaps})
			t := loadTarget{base: e.http.URL, caps: loadCaps, db: openReadOnly(b, e.dbPath), log: e.log.String, prior: map[string]bool{}}
			for i := range tokens {
				t.tokens = append(t.tokens, e.token(fmt.Sprint("t", i), []string{"read", "run"}, 100000, 1))
			}
			for range rounds {
				rates["native"] = append(rates["native"], load(b, t, clients))
			}
			b.Logf("GET /healthz: %s", healthzRate(b, t.base))
			e.close()
		}
	})
	for _, via := range []string{viaWrangler, viaWorkerd} {
		name := map[string]string{viaWrangler: "worker", viaWorkerd: "workerd"}[via]
		b.Run(name, func(b *testing.B) {
			var toks []workerToken
			for i := range tokens {
				toks = append(toks, workerToken{fmt.Sprint("t", i), []string{"read", "run"}})
			}
			for range b.N {
				w := startWorkerVia(b, via, loadCaps, toks, "warn")
				t := loadTarget{base: w.base, caps: loadCaps, db: openReadOnly(b, w.d1File(b)), log: w.log.String, prior: map[string]bool{}}
				for _, tk := range toks {
					t.tokens = append(t.tokens, w.toks[tk.name])
				}
				for round := range rounds {
					cpu0 := groupCPU(w.cmd.Process.Pid)
					f := load(b, t, clients)
					rates[name] = append(rates[name], f)
					cpu := groupCPU(w.cmd.Process.Pid)
					var sb strings.Builder
					for name, d := range cpu {
						fmt.Fprintf(&sb, "; %s %.1f ms", name, ms(d-cpu0[name])/float64(f.admitted))
					}
					b.Logf("%s, round %d: CPU a run%s", via, round+1, sb.String())
				}
				d1Calls(b, w.base, len(t.prior))
				b.Logf("GET /healthz through %s: %s", via, healthzRate(b, t.base))
			}
		})
	}
}

// sideBySide sets each Worker target's runs/s beside the native server's,
// round by round and over all rounds (all their runs over all their
// time), and over the rounds after the first (the isolate warm: the first
// round also pays V8's compiling of the module's hot functions, which a
// Worker serving traffic has paid already). A round a target did not
// finish is left out of its rows.
func sideBySide(rates map[string][]loadFigures, base string, targets ...string) string {
	ratio := func(a, b float64) string {
		if a == 0 || b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("1/%.1f", b/a)
	}
	nat := rates[base]
	var sb strings.Builder
	fmt.Fprintf(&sb, "side by side, runs/s (%s: %s)", base, roundRates(nat))
	for _, t := range targets {
		fs := rates[t]
		if len(fs) == 0 {
			continue
		}
		n := min(len(fs), len(nat))
		parts := make([]string, n)
		for i := range n {
			parts[i] = fmt.Sprintf("round %d %s", i+1, ratio(rate(fs[i:i+1]), rate(nat[i:i+1])))
		}
		fmt.Fprintf(&sb, "\n  %s: %s; of native: %s; all rounds %s", t, roundRates(fs), strings.Join(parts, ", "), ratio(rate(fs[:n]), rate(nat[:n])))
		if n > 1 {
			fmt.Fprintf(&sb, "; warm (rounds 2 to %d) %s", n, ratio(rate(fs[1:n]), rate(nat[1:n])))
		}
	}
	return sb.String()
}

// rate is the runs/s of rounds: all their runs over all their time.
func rate(fs []loadFigures) float64 {
	runs, wall := 0, time.Duration(0)
	for _, f := range fs {
		runs += f.admitted
		wall += f.wall
	}
	if wall == 0 {
		return 0
	}
	return float64(runs) / wall.Seconds()
}

// roundRates is each round's rate.
func roundRates(fs []loadFigures) string {
	parts := make([]string, len(fs))
	for i := range fs {
		parts[i] = fmt.Sprintf("%.1f", rate(fs[i:i+1]))
	}
	return strings.Join(parts, ", ")
}

// groupCPU is the CPU time (user and system) of the live processes of a
// process group, by process name (one name's processes added up).
func groupCPU(pgid int) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, pid := range groupAlive(pgid) {
		data, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "stat"))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(data), ')')
		name := string(data[strings.IndexByte(string(data), '(')+1 : i])
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 13 {
			continue
		}
		var user, sys int64
		fmt.Sscan(f[11], &user)
		fmt.Sscan(f[12], &sys)
		// Clock ticks: 100 a second on Linux (USER_HZ).
		out[name] += time.Duration(user+sys) * 10 * time.Millisecond
	}
	return out
}

// healthzRate is how many GET /healthz a second 16 keep-alive clients
// get answered at base, 2,000 in all.
func healthzRate(b *testing.B, base string) string {
	const clients, total = 16, 2000
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()
	load0 := loadavg()
	var n, bad atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n.Add(1) <= total {
				resp, err := c.Get(base + "/healthz")
				if err != nil {
					bad.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(b, bad.Load(), "every GET /healthz answered 200")
	return fmt.Sprintf("%.0f/s (%d clients, %d requests); load average %s -> %s", total/time.Since(began).Seconds(), clients, total, load0, loadavg())
}

// d1Calls logs the local Worker's D1 calls by kind (worker.mjs counts them
// for its isolate, which under wrangler dev holds the front and every run
// object), in all and per run. The runs are the isolate's own admissions
// (one call each): wrangler dev restarts the Worker under this load (its
// 503 "Your worker restarted mid-request"), and a new isolate counts from
// nought. A Worker that does not answer the counts (wrangler dev in the
// middle of such a restart) loses them, not the benchmark.
func d1Calls(b *testing.B, base string, runs int) {
	c := &http.Client{Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()
	var all map[string]json.RawMessage
	for try := 1; ; try++ {
		resp, err := c.Get(base + "/_d1-calls")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&all)
			resp.Body.Close()
		}
		if err == nil {
			break
		}
		if try == 3 {
			b.Logf("D1 calls: not known (%v, three times)", err)
			return
		}
		time.Sleep(2 * time.Second) // a Worker being restarted refuses at once
	}
	if n, ok := all["admission"]; ok {
		var admitted int
		if json.Unmarshal(n, &admitted) == nil && admitted > 0 && admitted != runs {
			b.Logf("D1 calls: the isolate admitted %d of the %d runs (wrangler dev restarted it): per run is per those", admitted, runs)
			runs = admitted
		}
	}
	calls, statements := map[string]int{}, map[string]int{}
	kinds := make([]string, 0, len(all))
	total, stmts := 0, 0
	for k, v := range all {
		if strings.HasPrefix(k, "stage ") {
			b.Logf("front %s: %s", k, v)
			continue
		}
		var n int
		require.NoError(b, json.Unmarshal(v, &n))
		if kind, ok := strings.CutPrefix(k, "statements "); ok {
			statements[kind] = n
			stmts += n
			continue
		}
		calls[k] = n
		kinds = append(kinds, k)
		total += n
	}
	sort.Strings(kinds)
	var sb strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&sb, "; %s %d (%.2f a run)", k, calls[k], float64(calls[k])/float64(runs))
	}
	b.ReportMetric(float64(total)/float64(runs), "d1-calls/run")
	b.Logf("D1 calls: %d for %d runs (%.2f a run)%s", total, runs, float64(total)/float64(runs), sb.String())
	sb.Reset()
	for _, k := range kinds {
		fmt.Fprintf(&sb, "; %s %.2f a run", k, float64(statements[k])/float64(runs))
	}
	b.ReportMetric(float64(stmts)/float64(runs), "d1-statements/run")
	b.Logf("D1 statements: %d (%.2f a run)%s", stmts, float64(stmts)/float64(runs), sb.String())
}

// Cancel latency: a Gemini run waits on a model that never answers; the
// time from sending the cancel to reading the end event on the run's open
// stream (the in-flight request is aborted on the way), natively and on
// the local Worker (where the cancel is a call to the run's object).
func BenchmarkServerCancelToEndEvent(b *testing.B) {
	scenario(b)
	const runs = 50
	b.Run("native", func(b *testing.B) {
		for range b.N {
			f := newFake(b, hanging())
			e := newEnv(b, options{endpoint: f.srv.URL})
			tok := e.token("alice", []string{"read", "run", "live"}, 100000, 1000)
			cancels(b, e.http.URL, tok, f, runs)
			e.close()
		}
	})
	b.Run("worker", func(b *testing.B) {
		for range b.N {
			w := startWorker(b, storeCaps(4, 2, 8, 4), []workerToken{{"alice", []string{"read", "run", "live"}}}, "warn")
			f := newFake(b, hanging())
			w.fake.use(f)
			cancels(b, w.base, w.toks["alice"], f, runs)
		}
	})
}

// cancels measures runs cancels of in-flight Gemini runs against base.
func cancels(b *testing.B, base, tok string, f *fake, runs int) {
	load0 := loadavg()
	var lat []time.Duration
	for range runs {
		before, _ := f.counts()
		hr, _ := http.NewRequest("POST", base+"/v1/runs", strings.NewReader(`{`+overwrite+`, "policy": "gemini", "stream": true}`))
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(hr)
		require.NoError(b, err)
		require.Equal(b, http.StatusOK, resp.StatusCode)
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
		cr, _ := http.NewRequest("POST", base+"/v1/runs/"+id+"/cancel", nil)
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
	require.Equal(b, runs, aborted, "every in-flight request aborted")
	b.ReportMetric(ms(percentile(lat, .5)), "cancel-p50-ms")
	b.ReportMetric(ms(percentile(lat, .99)), "cancel-p99-ms")
	b.Logf("%d cancels of in-flight Gemini runs: cancel -> end event p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d in-flight requests aborted; load average %s -> %s",
		runs, ms(percentile(lat, .5)), ms(percentile(lat, .99)), ms(percentile(lat, 1)), aborted, load0, loadavg())
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
		env := append(os.Environ(), "RAGAGENT_TOKEN_PEPPER="+string(pepper), "GOOGLE_API_KEY="+dummyKey, "GEMINI_API_KEY=")
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

// Authenticated GETs against /healthz: 16 keep-alive clients for 3 s each,
// GET /v1/runs/{id} of a finished run with the requests written one by one
// as they are counted (UsageFlush 0, as every GET was before, and as the
// Worker still does) and counted in memory (written every second, as
// serve-api does), and /healthz (no token, no store) beside them, in one
// run with the load average.
func BenchmarkServerAuthenticatedGETs(b *testing.B) {
	scenario(b)
	const clients, span = 16, 3 * time.Second
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	rate := func(url, tok string) float64 {
		var n atomic.Int64
		stop := time.Now().Add(span)
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					hr, _ := http.NewRequest("GET", url, nil)
					if tok != "" {
						hr.Header.Set("Authorization", "Bearer "+tok)
					}
					resp, err := client.Do(hr)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("%s: %d", url, resp.StatusCode)
						return
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		return float64(n.Load()) / span.Seconds()
	}
	for range b.N {
		load0 := loadavg()
		var figures []string
		for _, mode := range []struct {
			name  string
			flush time.Duration
		}{{"a write per GET", -1}, {"counted in memory", time.Second}, {"a write per GET, again", -1}, {"counted in memory, again", time.Second}} {
			e := newEnv(b, options{usageFlush: mode.flush})
			tok := e.token("bench", []string{"read", "run"}, 1<<30, 1)
			id := e.start(tok, `{`+overwrite+`}`)
			e.await(tok, id)
			got := rate(e.base+"/v1/runs/"+id, tok)
			health := rate(e.base+"/healthz", "")
			b.ReportMetric(got, strings.NewReplacer(" ", "-", ",", "").Replace(mode.name)+"-GET/s")
			figures = append(figures, fmt.Sprintf("%s: %.0f GETs/s (/healthz %.0f/s)", mode.name, got, health))
			e.close()
		}
		b.Logf("%d clients, %s each: %s; load average %s -> %s", clients, span, strings.Join(figures, "; "), load0, loadavg())
	}
}
