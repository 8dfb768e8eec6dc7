// Package layout holds the project's layout rules as tests (see
// layout_test.go): what core may import, and which packages alone talk to
// JS. It has no code of its own; the rules live outside core so that core
// holds no text about the JS bridge at all.
package layout
