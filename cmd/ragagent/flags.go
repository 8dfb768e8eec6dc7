package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ragagentlab/ragagent/core/engine"
)

// newFlags returns a flag set that reports errors on stderr and never exits.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: ragagent %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; ok is false with the exit code to return.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK, false
	case err != nil:
		return exitUsage, false
	case fs.NArg() > 0:
		fmt.Fprintf(fs.Output(), "ragagent %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage, false
	}
	return exitOK, true
}

// parsePolicy splits a --policy value into the engine's policy name and,
// for replay:FILE, the recording's file: a policy the engine offers
// (engine.Policies) alone, or replay with a file. Anything else is refused,
// naming them.
func parsePolicy(v string) (name, file string, err error) {
	name, file, found := strings.Cut(v, ":")
	if engine.PolicyName(name) == engine.Replay && found && file != "" {
		return name, file, nil
	}
	var names []string
	for _, p := range engine.Policies() {
		if !found && string(p.Name) == name {
			return name, "", nil
		}
		names = append(names, string(p.Name))
	}
	return "", "", fmt.Errorf("--policy %q is not %s or %s:FILE", v, strings.Join(names, ", "), engine.Replay)
}
