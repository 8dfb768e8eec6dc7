package engine

import "github.com/ragagentlab/ragagent/core/lab"

// LabOf lets the engine's tests compare its results with the lab behind
// it; no front end can reach it.
func LabOf(e *Engine, corpus string) (*lab.Lab, error) { return e.labFor(corpus) }
