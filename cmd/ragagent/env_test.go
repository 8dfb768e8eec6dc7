package main

import "testing"

// noKey clears the key variables for a test.
func noKey(t *testing.T) {
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "")
}
