// Package recordings embeds the bundled replay recordings, so the command
// line and the page replay the same bytes without a file system.
package recordings

import _ "embed"

// AgentComparison is agent-comparison.json: the reference lab's 16-trial
// live comparison (40 Gemini exchanges) as a ragagent-recording/1 file,
// rebuilt from the published record by `ragagent import-published`.
//
//go:embed agent-comparison.json
var AgentComparison []byte
