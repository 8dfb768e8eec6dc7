#!/bin/sh
# build-sqlite-pack.sh rebuilds fixtures/packs/sqlite-3.40 (the corpus pack of
# the SQLite 3.40 documentation) from Debian's sqlite3-doc package: sqlite.org's
# pages as the site publishes them (no Sphinx, no <main>: the builder leaves
# the site's menu, tables of contents and sidebars out by link density, see
# docs/builder.md), cut into passages of at most 1500 bytes, written as a
# prebuilt SQLite FTS5 image, gzip-compressed. The pack is committed, so runs
# are reproducible whatever Debian ships later; run this only to rebuild it
# (two builds give the same bytes).
#
# Left out, as a person building a pack of these docs would: copies of pages
# that are in the pack already, and pages whose text is not prose.
#   releaselog/            one page per release, each a copy of its part of changes.html
#   syntax/                the syntax diagrams, whose text is inside SVG pictures
#   capi3ref.html          the whole C interface on one page, a copy of c3ref/
#   session.html           the session extension's interface on one page, a copy of session/
#   fileformat.html        byte for byte fileformat2.html
#   requirements.html      every requirement sentence of the other pages, copied
#   doc_*_crossref.html, keyword_index.html
#                          indexes generated from the other pages' links and keywords
set -eu
cd "$(dirname "$0")/.."
DOC=/usr/share/doc/sqlite3
if [ ! -f "$DOC/lang_upsert.html" ]; then
	if [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3-doc >/dev/null
	else
		echo "build-sqlite-pack.sh needs Debian's sqlite3-doc: apt-get install sqlite3-doc" >&2
		exit 1
	fi
fi
DEB_VERSION=$(dpkg-query -W -f='${Version}' sqlite3-doc)
OUT=${OUT:-fixtures/packs/sqlite-3.40}
EXCLUDE=releaselog,syntax,capi3ref.html,session.html,fileformat.html,requirements.html,doc_backlink_crossref.html,doc_keyword_crossref.html,doc_pagelink_crossref.html,doc_target_crossref.html,keyword_index.html
rm -f "$OUT/manifest.json" "$OUT"/passages.*
go run ./cmd/ragagent corpus build \
	--from "$DOC" --exclude "$EXCLUDE" --out "$OUT" \
	--id sqlite-3.40 --title "SQLite 3.40 documentation: SQL language, C interface, extensions and internals" \
	--language en --version 3.40 --search-k 3 --config general --max-bytes 1500 \
	--base-url https://www.sqlite.org/ --encoding sqlite --gzip \
	--licence "Public domain: all of the code and documentation in SQLite has been dedicated to the public domain by the authors. See https://www.sqlite.org/copyright.html" \
	--attribution "SQLite documentation, https://www.sqlite.org/ (D. Richard Hipp and the SQLite developers). Public domain: no attribution is required." \
	--source "Debian package sqlite3-doc $DEB_VERSION: the HTML under $DOC, less $EXCLUDE" \
	--made-by "scripts/build-sqlite-pack.sh: ragagent corpus build --exclude (copies, generated indexes, syntax diagrams) --max-bytes 1500 --search-k 3 --config general --encoding sqlite --gzip (sqlite.org's HTML: no marked main content, the site's chrome left out by link density)"
