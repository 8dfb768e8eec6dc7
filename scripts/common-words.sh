#!/bin/sh
# common-words.sh rebuilds core/policy/common-words.txt, the scripted
# policy's notion of an ordinary English word: the words of SCOWL's two
# most common size levels (10 and 20: about the 11,000 commonest English
# words with their inflections), lower-case ASCII letters only, sorted
# bytewise, one a line. SCOWL comes from Debian's scowl package
# (apt-get install scowl); its licence is in core/policy/common-words.NOTICE.
set -eu
dir=/usr/share/dict/scowl
out=${1:-core/policy/common-words.txt}
cat "$dir"/english-words.10 "$dir"/english-words.20 "$dir"/american-words.10 "$dir"/american-words.20 |
	LC_ALL=C grep -x '[a-z][a-z]*' | LC_ALL=C sort -u >"$out"
wc -l "$out"
