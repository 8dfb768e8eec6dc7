package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/ragagentlab/ragagent/internal/remote"
)

// serverCorpus is a `ragagent corpus upload|list|delete` command: the
// team server's packs, the token's uploads among them. Each needs
// --server; the token comes as for `retrieval --server`.
type serverCorpus struct {
	name      string
	fs        *flag.FlagSet
	server    *string
	tokenFile *string
	json      *bool
	in        inputs
	stderr    io.Writer
}

func newServerCorpus(name, synopsis, jsonUsage string, stderr io.Writer) *serverCorpus {
	fs := newFlags("corpus "+name, synopsis, stderr)
	sc := &serverCorpus{
		name: name, fs: fs, stderr: stderr, json: new(bool),
		server:    fs.String("server", "", "the team server's `URL` (ragagent serve-api, or the server edition on Workers)"),
		tokenFile: fs.String("token-file", "", "the `file` holding the server's token (default: the "+tokenVariable+" environment variable)"),
		in:        addInputFlag(fs),
	}
	if jsonUsage != "" {
		fs.BoolVar(sc.json, "json", false, jsonUsage)
	}
	return sc
}

// parse reads the flags and at most one argument, which may come before
// or after them (what says what it names; "" for none), and opens the
// client. code is the exit code when ok is false.
func (sc *serverCorpus) parse(args []string, what string) (arg string, c *remote.Client, code int, ok bool) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		arg, args = args[0], args[1:]
	}
	if code, ok := parseFlags(sc.fs, args); !ok {
		return "", nil, code, false
	}
	if arg == "" && sc.fs.NArg() == 1 {
		arg = sc.fs.Arg(0)
	} else if sc.fs.NArg() > 0 || (what == "") != (arg == "") {
		if what == "" {
			return "", nil, sc.usage(errors.New("takes no argument")), false
		}
		return "", nil, sc.usage(fmt.Errorf("name %s", what)), false
	}
	if *sc.server == "" {
		return "", nil, sc.usage(errors.New("--server URL names the team server whose packs these are (a local pack folder is used as it is: --corpus DIR)")), false
	}
	if err := sc.in.check(); err != nil {
		return "", nil, sc.usage(err), false
	}
	c, err := dialServer(sc.fs, *sc.server, *sc.tokenFile, "", nil, "", sc.in)
	if err != nil {
		return "", nil, sc.usage(err), false
	}
	return arg, c, 0, true
}

func (sc *serverCorpus) usage(err error) int {
	fmt.Fprintf(sc.stderr, "ragagent corpus %s: %s\n", sc.name, oneLine(err))
	return exitUsage
}

func (sc *serverCorpus) fail(err error) int {
	fmt.Fprintf(sc.stderr, "ragagent corpus %s: %s\n", sc.name, oneLine(err))
	return exitError
}

// corpusLine is one pack as the server describes it, in a line.
func corpusLine(c corpusJSON) string {
	line := fmt.Sprintf("%s  %s  %d passages  versions %s (default %s)  %s", c.ID, c.Origin, c.Passages, strings.Join(c.Versions, ", "), c.DefaultVersion, c.Title)
	if c.Bytes != nil {
		line += fmt.Sprintf("  %d bytes", *c.Bytes)
	}
	return line
}

// corpusJSON is the server's corpus object, the fields the lines show.
type corpusJSON struct {
	ID             string   `json:"id"`
	Title          string   `json:"title"`
	Origin         string   `json:"origin"`
	Passages       int      `json:"passages"`
	Versions       []string `json:"versions"`
	DefaultVersion string   `json:"default_version"`
	SHA256         string   `json:"sha256"`
	Bytes          *int     `json:"bytes"`
}

// cmdCorpusUpload is `ragagent corpus upload --server URL DIR`: the pack
// folder `corpus build` wrote, uploaded as the token's own, which runs
// and experiments on that server then name by its id.
func cmdCorpusUpload(args []string, stdout, stderr io.Writer) int {
	sc := newServerCorpus("upload", "--server URL [--token-file FILE] [--json] DIR (a pack folder: manifest.json and its passages file)",
		"print the server's corpus object", stderr)
	dir, client, code, ok := sc.parse(args, "one pack folder (ragagent corpus build --out writes one)")
	if !ok {
		return code
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return sc.usage(fmt.Errorf("%s is not a pack folder (ragagent corpus build --out writes one)", dir))
	}
	archive, err := remote.PackArchive(dir, sc.in.read)
	if err != nil {
		return sc.fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Fprintf(stderr, "uploading %s (%d bytes gzip'd) to %s ...\n", dir, len(archive), *sc.server)
	body, err := client.Upload(ctx, archive)
	return sc.print(stdout, body, err, func(c corpusJSON) string {
		return fmt.Sprintf("uploaded %s\n%s\nruns and experiments on the server name it: --corpus %s --server %s\n", dir, corpusLine(c), c.ID, *sc.server)
	})
}

// print writes the server's answer body: as it is with --json, else as
// text's lines, of the one corpus it is or of each in its "corpora".
func (sc *serverCorpus) print(stdout io.Writer, body []byte, err error, text func(corpusJSON) string) int {
	if err == nil && *sc.json {
		_, err = stdout.Write(body)
	} else if err == nil {
		var one corpusJSON
		var list struct{ Corpora []corpusJSON }
		if err = json.Unmarshal(body, &list); err == nil && list.Corpora == nil {
			err = json.Unmarshal(body, &one)
			list.Corpora = []corpusJSON{one}
		}
		for _, c := range list.Corpora {
			if err == nil {
				_, err = io.WriteString(stdout, text(c))
			}
		}
	}
	if err != nil {
		return sc.fail(err)
	}
	return exitOK
}

// cmdCorpusList is `ragagent corpus list --server URL`: the packs the
// token's runs may name there.
func cmdCorpusList(args []string, stdout, stderr io.Writer) int {
	sc := newServerCorpus("list", "--server URL [--token-file FILE] [--json]", "print the server's {\"corpora\": [...]}", stderr)
	_, client, code, ok := sc.parse(args, "")
	if !ok {
		return code
	}
	body, err := client.Corpora(context.Background())
	return sc.print(stdout, body, err, func(c corpusJSON) string { return corpusLine(c) + "\n" })
}

// cmdCorpusDelete is `ragagent corpus delete --server URL ID`: the
// token's upload removed, its quota freed.
func cmdCorpusDelete(args []string, stdout, stderr io.Writer) int {
	sc := newServerCorpus("delete", "--server URL [--token-file FILE] ID (one of the token's uploads)", "", stderr)
	id, client, code, ok := sc.parse(args, "one uploaded pack's id")
	if !ok {
		return code
	}
	if err := client.Delete(context.Background(), id); err != nil {
		return sc.fail(err)
	}
	fmt.Fprintf(stdout, "deleted %s from %s\n", id, *sc.server)
	return exitOK
}
