#!/usr/bin/env bash
# render-man.sh HELP2MAN SUMMARY TOOL OUTPUT.1.gz: TOOL --help as a gzipped man page (version from TOOL --version).
set -euo pipefail
"$1" --no-info --no-discard-stderr --name="$2" --section=1 "$3" | gzip -9n >"$4.tmp"
mv "$4.tmp" "$4"
