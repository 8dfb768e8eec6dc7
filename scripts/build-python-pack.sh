#!/bin/sh
# build-python-pack.sh rebuilds fixtures/packs/python-3.11 (the corpus pack of the
# Python 3.11 documentation) from Debian's python3.11-doc package:
# library/, reference/ and tutorial/, cut into passages of at most 1500
# bytes, written as a prebuilt SQLite FTS5 image, gzip-compressed. The pack
# is committed, so runs are reproducible whatever Debian ships later; run
# this only to rebuild it (the sha256 in the manifest changes only when the
# documentation or the builder does).
set -eu
cd "$(dirname "$0")/.."
DOC=/usr/share/doc/python3.11/html
if [ ! -d "$DOC/library" ]; then
	if [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.11-doc >/dev/null
	else
		echo "build-python-pack.sh needs Debian's python3.11-doc: apt-get install python3.11-doc" >&2
		exit 1
	fi
fi
DEB_VERSION=$(dpkg-query -W -f='${Version}' python3.11-doc)
OUT=${OUT:-fixtures/packs/python-3.11}
rm -f "$OUT/manifest.json" "$OUT"/passages.*
go run ./cmd/ragagent corpus build \
	--from "$DOC" --include library,reference,tutorial --out "$OUT" \
	--id python-3.11 --title "Python 3.11 documentation: library, language reference and tutorial" \
	--language en --version 3.11 --search-k 3 --config scripts/configs/python-3.11.json --max-bytes 1500 \
	--base-url https://docs.python.org/3.11/ --encoding sqlite --gzip \
	--licence "PSF License Agreement for Python 3.11.2 (the documentation); the code examples in it are also under the Zero-Clause BSD licence. See https://docs.python.org/3.11/license.html" \
	--attribution "Python 3.11 documentation. Copyright © 2001-2023 Python Software Foundation. All rights reserved." \
	--source "Debian package python3.11-doc $DEB_VERSION: the HTML under $DOC, pages library/, reference/ and tutorial/" \
	--made-by "scripts/build-python-pack.sh: ragagent corpus build --include library,reference,tutorial --max-bytes 1500 --search-k 3 --config scripts/configs/python-3.11.json (chosen by leave-one-site-out on the other sites) --encoding sqlite --gzip (Sphinx HTML: headings, sections and documented objects as anchors)"
