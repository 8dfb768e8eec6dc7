#!/bin/sh
# build-site-pack.sh SITE [OUT] builds the corpus pack of one documentation
# site from Debian's HTML documentation, as a user would build a pack of
# their own documents: `ragagent corpus build` with its defaults (the
# passage cap, the pack's default retrieval configuration), nothing tuned
# for the site beyond leaving out copies of pages and generated indexes.
# These packs are not committed (together they are larger than every pack
# shipped); they are what fixtures/cases/SITE-natural.json is measured on
# (docs/retrieval.md, make sites). OUT defaults to .cache/packs/SITE; an
# existing pack there is replaced. RAGAGENT (default: go run ./cmd/ragagent)
# is the command that builds.
#
#   postgresql  PostgreSQL 15 (DocBook HTML: one page per section)
#   nodejs      Node.js 18 API (Node's own generator; all.html, a copy of every page, left out)
#   git         Git 2.39 (AsciiDoc HTML: one page per command and guide)
#   bash        the Bash 5.2 reference manual (texinfo HTML, one long page)
#   cmake       CMake 3.25 (Sphinx: one page per command, variable, property, module)
#   sqlite      SQLite 3.40 (sqlite.org's own HTML: see build-sqlite-pack.sh)
#   python      Python 3.11 (Sphinx: see build-python-pack.sh)
set -eu
cd "$(dirname "$0")/.."
SITE=${1:?usage: build-site-pack.sh SITE [OUT]}
OUT=${2:-.cache/packs/$SITE}
RAGAGENT=${RAGAGENT:-go run ./cmd/ragagent}
EXCLUDE=
NOTE=
INCLUDE=
PAGE_EXT=
case $SITE in
postgresql)
	PKG=postgresql-doc-15 DOC=/usr/share/doc/postgresql-doc-15/html VERSION=15.18
	BASE=https://www.postgresql.org/docs/15/ TITLE="PostgreSQL 15 documentation"
	EXCLUDE=bookindex.html
	LICENCE="PostgreSQL Licence (a liberal Open Source licence, similar to the BSD or MIT licences): https://www.postgresql.org/about/licence/"
	ATTRIBUTION="PostgreSQL 15 documentation, Copyright (c) 1996-2022 The PostgreSQL Global Development Group" ;;
nodejs)
	PKG=nodejs-doc DOC=/usr/share/doc/nodejs/api VERSION=18.20
	BASE=https://nodejs.org/docs/latest-v18.x/api/ TITLE="Node.js 18 API documentation"
	EXCLUDE=all.html,assets
	LICENCE="MIT: https://github.com/nodejs/node/blob/main/LICENSE"
	ATTRIBUTION="Node.js documentation, Copyright Node.js contributors" ;;
git)
	PKG=git-doc DOC=/usr/share/doc/git-doc VERSION=2.39
	BASE=https://mirrors.edge.kernel.org/pub/software/scm/git/docs/ TITLE="Git 2.39 documentation"
	NOTE="the AsciiDoc sources (*.txt), copies of the pages"
	LICENCE="GPL-2.0: https://github.com/git/git/blob/master/COPYING"
	ATTRIBUTION="Git documentation, Copyright Linus Torvalds and the Git contributors" ;;
bash)
	PKG=bash-doc DOC=/usr/share/doc/bash VERSION=5.2
	BASE=https://www.gnu.org/software/bash/manual/ TITLE="Bash 5.2 reference manual"
	EXCLUDE=bash.html,examples
	LICENCE="GNU Free Documentation License 1.3: https://www.gnu.org/licenses/fdl-1.3.html"
	ATTRIBUTION="Bash Reference Manual, Copyright (C) 1988-2022 Free Software Foundation, Inc." ;;
cmake)
	PKG=cmake-doc DOC=/usr/share/doc/cmake-data/html VERSION=3.25
	BASE=https://cmake.org/cmake/help/v3.25/ TITLE="CMake 3.25 documentation"
	EXCLUDE=genindex.html,search.html,_static,_sources,_images
	LICENCE="BSD-3-Clause: https://cmake.org/licensing/"
	ATTRIBUTION="CMake documentation, Copyright 2000-2022 Kitware, Inc. and Contributors" ;;
sqlite | python)
	exec env OUT="$OUT" sh "scripts/build-$SITE-pack.sh" ;;
*)
	echo "build-site-pack.sh: no site $SITE (postgresql, nodejs, git, bash, cmake, sqlite, python)" >&2
	exit 2 ;;
esac
# The package is unpacked into .cache/debian/PKG, never installed: an
# install of nodejs-doc replaces the machine's own Node.js with Debian's.
ROOT=.cache/debian/$PKG
if [ ! -f "$ROOT/VERSION" ]; then
	tmp=$(mktemp -d)
	# Stale package lists name versions the mirror no longer has: as root,
	# they are refreshed once and the download tried again.
	if ! (cd "$tmp" && apt-get download -qq "$PKG" >/dev/null 2>&1); then
		[ "$(id -u)" = 0 ] && apt-get update -qq >/dev/null 2>&1
		(cd "$tmp" && apt-get download -qq "$PKG" >/dev/null) || {
			echo "build-site-pack.sh: cannot download Debian's $PKG (apt-get update, then apt-get download $PKG)" >&2
			exit 1
		}
	fi
	rm -rf "$ROOT" && mkdir -p "$ROOT"
	dpkg-deb -x "$tmp"/*.deb "$ROOT"
	dpkg-deb -f "$tmp"/*.deb Version > "$ROOT/VERSION"
	rm -rf "$tmp"
fi
DEB_VERSION=$(cat "$ROOT/VERSION")
DOC=$ROOT$DOC
if [ "$SITE" = git ]; then
	EXCLUDE=$(cd "$DOC" && find . -name '*.txt' | sed 's|^\./||' | sort | paste -sd, -)
fi
rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
$RAGAGENT corpus build --from "$DOC" ${EXCLUDE:+--exclude "$EXCLUDE"} ${INCLUDE:+--include "$INCLUDE"} \
	${PAGE_EXT:+--page-ext "$PAGE_EXT"} --out "$OUT" --id "$SITE-$VERSION" --title "$TITLE" --language en \
	--version "$VERSION" --search-k 3 --base-url "$BASE" --encoding sqlite --gzip \
	--licence "$LICENCE" --attribution "$ATTRIBUTION" \
	--source "Debian package $PKG $DEB_VERSION: the HTML under ${DOC#$ROOT}${EXCLUDE:+, less ${NOTE:-$EXCLUDE}}" \
	--made-by "scripts/build-site-pack.sh $SITE"
