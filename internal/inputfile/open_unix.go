//go:build unix

package inputfile

import "syscall"

// nonBlocking opens a FIFO without waiting for a writer; it changes nothing
// for a regular file.
const nonBlocking = syscall.O_NONBLOCK
