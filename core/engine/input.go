package engine

import (
	"fmt"

	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/recording"
)

// MaxInputBytes is the cap on a file the lab reads (jsonfile.MaxInputBytes):
// a recording the page is given, a file the command line opens by default.
const MaxInputBytes = jsonfile.MaxInputBytes

// ParseRecording reads a recording a front end was given (a file the page
// loads): one over jsonfile.MaxInputBytes, the cap the command line puts on
// a file it opens, is refused unread; the rest goes to the strict reader
// (recording.Parse), whose memory is bounded too.
func ParseRecording(data []byte) (*recording.File, error) {
	if len(data) > MaxInputBytes {
		return nil, &recording.ParseError{Msg: fmt.Sprintf("the file is %d bytes, over the cap of %d bytes on a file the lab reads", len(data), MaxInputBytes)}
	}
	return recording.Parse(data)
}
