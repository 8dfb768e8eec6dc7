#!/bin/sh
# The retrieval experiment's speed natively and compiled to WebAssembly
# under node (Go's own wasm runner), side by side: the Python pack's 39
# cases under each built-in and under all of them (first-ms is the first
# experiment, which builds each configuration's structures; ns/op the next
# ones), and the pack opened and made ready under every built-in. Rounds
# alternate native and WASM so both see the same load; the load average is
# printed before each round and at the end. Usage: scripts/bench-retrieval.sh [ROUNDS]
set -eu
GO=${GO:-go}
ROUNDS=${1:-3}
GOROOT=$($GO env GOROOT)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
$GO test -c -o "$dir/native.test" ./fixtures/packs
GOOS=js GOARCH=wasm $GO test -c -gcflags='github.com/ncruces/go-sqlite3-wasm/v6/...=-B' -o "$dir/wasm.test" ./fixtures/packs
cd fixtures/packs
bench='PythonPackRetrieval|PythonPackOpenWithConfigs'
i=1
while [ "$i" -le "$ROUNDS" ]; do
	echo "# round $i: $(uptime)"
	"$dir/native.test" -test.run '^$' -test.bench "$bench" -test.benchtime 5x | grep '^Benchmark' | sed 's/^/native /'
	"$GOROOT/lib/wasm/go_js_wasm_exec" "$dir/wasm.test" -test.run '^$' -test.bench "$bench" -test.benchtime 5x | grep '^Benchmark' | sed 's/^/wasm   /'
	i=$((i + 1))
done
echo "# end: $(uptime)"
