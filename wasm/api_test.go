//go:build js && wasm

package main

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every row of exports has a name of its own, and the package doc (the
// API's one description) lists each with its arguments, and nothing else.
func TestEveryExportIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("main.go")
	require.NoError(t, err)
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^//\t(\w+)\(`).FindAllSubmatch(doc, -1) {
		documented[string(m[1])] = true
	}
	seen := map[string]bool{}
	for _, x := range exports() {
		assert.False(t, seen[x.name], "%s is exported twice", x.name)
		seen[x.name] = true
		assert.True(t, documented[x.name], "%s is not in main.go's list", x.name)
		assert.NotNil(t, x.do, x.name)
	}
	for name := range documented {
		assert.True(t, seen[name], "main.go lists %s, which is not exported", name)
	}
	assert.Greater(t, len(seen), 25)
}
