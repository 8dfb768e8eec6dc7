package testlog_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ragagentlab/ragagent/internal/testlog"
)

// Writes from many goroutines all arrive, whole (run with -race).
func TestBufferTakesConcurrentWrites(t *testing.T) {
	var b testlog.Buffer
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); b.Write([]byte("line\n")); _ = b.String() }()
	}
	wg.Wait()
	assert.Equal(t, strings.Repeat("line\n", 50), b.String())
}
