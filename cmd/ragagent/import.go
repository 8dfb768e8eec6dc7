package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/internal/keyguard"
	"github.com/ragagentlab/ragagent/internal/published"
)

func cmdImportPublished(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("import-published", "[--published FILE] [--output FILE] [--check] [--max-input-bytes N]", stderr)
	publishedFile := fs.String("published", "", "the reference lab's published comparison `file` (default: fixtures/published/agent-live-comparison.json, embedded)")
	output := fs.String("output", "recordings/agent-comparison.json", "where to write the recording (`file`)")
	check := fs.Bool("check", false, "compare with --output instead of writing it; exit 1 if they differ")
	in := addInputFlag(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if err := in.check(); err != nil {
		fmt.Fprintf(stderr, "ragagent import-published: %s\n", err)
		return exitUsage
	}
	data := fixtures.Published
	if *publishedFile != "" {
		var err error
		if data, err = in.read(*publishedFile); err != nil {
			fmt.Fprintf(stderr, "ragagent import-published: %s\n", oneLine(err))
			return exitError
		}
	}
	rebuilt, err := published.Rebuild(data)
	if err != nil {
		fmt.Fprintf(stderr, "ragagent import-published: %s\n", oneLine(err))
		return exitError
	}
	if *check {
		current, err := in.read(*output)
		if err != nil {
			fmt.Fprintf(stderr, "ragagent import-published: %s\n", oneLine(err))
			return exitError
		}
		if !bytes.Equal(current, rebuilt) {
			fmt.Fprintf(stderr, "ragagent import-published: %s differs from the rebuilt recording; run 'ragagent import-published' to rewrite it\n", *output)
			return exitError
		}
		fmt.Fprintf(stdout, "%s is up to date\n", *output)
		return exitOK
	}
	if err := keyguard.FromEnv().WriteFile(*output, rebuilt, false); err != nil {
		fmt.Fprintf(stderr, "ragagent import-published: %s\n", oneLine(err))
		return exitError
	}
	fmt.Fprintf(stdout, "wrote %s (%d bytes)\n", *output, len(rebuilt))
	return exitOK
}
