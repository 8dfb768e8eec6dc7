//go:build js && wasm

package main

import (
	"context"
	"time"

	"github.com/syumai/workers"

	"github.com/ragagentlab/ragagent/internal/server"
)

// serveRunner builds a run object's server: it executes the runs its
// object owns (promoted ones it does not own it hands to their object),
// serves their streams from the events it writes (woken in process, the
// store read once a second for what other objects and a revoke write) and
// answers the front's calls (server.Server.RunnerHandler) through
// syumai/workers' handleRequest; worker.mjs calls /runner/recover on the
// object's alarm.
func serveRunner() error {
	cfg, err := config(context.Background())
	if err != nil {
		return err
	}
	n, err := runners()
	if err != nil {
		return err
	}
	cfg.Dispatch = &objects{n: n, self: jsContext.Get("shard").Int()}
	cfg.Poll = 5 * time.Second
	// A stream whose run cancels when its client goes writes a keep-alive
	// every second: workerd notices a closed connection only at a write
	// (the second after the close), and the relay in worker.mjs then
	// tells this program (/runner/gone).
	cfg.GoneHeartbeat = time.Second
	cfg.UsageFlush = 0
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	workers.ServeNonBlock(srv.RunnerHandler())
	return nil
}
