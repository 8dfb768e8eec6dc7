// Package ledgerfile keeps the spending ledger (budget.Ledger) in a file on
// disk, for the command line. The ledger's rules live in core/budget; this
// package only loads and saves its bytes.
package ledgerfile

import (
	"errors"
	"os"

	"github.com/ragagentlab/ragagent/core/budget"
	"github.com/ragagentlab/ragagent/internal/atomicfile"
)

var _ budget.Store = File{}

// File is a Store in a file. Save writes a temporary file beside it,
// flushes it to disk and renames it into place, so a crash leaves the old
// ledger or the new one, never half of one.
type File struct {
	Path string
}

// Load reads the file; a missing file is an empty ledger.
func (f File) Load() ([]byte, bool, error) {
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// Save replaces the file atomically: on disk before it replaces the old
// ledger, never half written.
func (f File) Save(data []byte) error { return atomicfile.Write(f.Path, data) }
