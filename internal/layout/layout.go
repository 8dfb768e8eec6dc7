// Package layout holds the project's layout rules as tests: what core may
// import and which packages alone talk to JS (wasm/, worker/ and the
// bridge they share, internal/jsbridge: layout_test.go), and how far
// the front ends reach into the core: the command line imports at most
// eight core packages and the engine's exported API hands out no type of
// the lab, the reranking lab, the tools or the index (api_test.go). It has
// no code of its own; the rules live outside core so that core holds no
// text about the JS bridge at all.
package layout
