#!/usr/bin/env bash
# render-man.sh HELP2MAN VERSION SUMMARY TOOL OUTPUT.1.gz: TOOL --help as a gzipped man page.
set -euo pipefail
"$1" --no-info --no-discard-stderr --version-string="$2" --name="$3" --section=1 "$4" | gzip -9n >"$5.tmp"
mv "$5.tmp" "$5"
