package engine

import (
	"fmt"

	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/secret"
)

// ParseRecording reads a recording a front end was given (a file the page
// loads): one over jsonfile.MaxInputBytes, the cap the command line puts on
// a file it opens, is refused unread; the rest goes to the strict reader
// (recording.Parse), whose memory is bounded too.
func ParseRecording(data []byte) (*recording.File, error) {
	if len(data) > jsonfile.MaxInputBytes {
		return nil, &recording.ParseError{Msg: fmt.Sprintf("the file is %d bytes, over the cap of %d bytes on a file the lab reads", len(data), jsonfile.MaxInputBytes)}
	}
	return recording.Parse(data)
}

// Redact is the redaction every transport applies to every reply body
// before the engine sees it (secret.Redact: the key as sent, verbatim,
// JSON-escaped or URL-encoded), for a front end whose transport is not Go:
// the page's shell, which holds the key, runs it on each body it fetches.
func Redact(body []byte, key string) []byte { return secret.Redact(body, key) }
