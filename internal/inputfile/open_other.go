//go:build !unix

package inputfile

// nonBlocking is not needed where there are no FIFOs to block on.
const nonBlocking = 0
