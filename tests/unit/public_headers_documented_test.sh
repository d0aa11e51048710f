#!/usr/bin/env bash
# Every public header (FOLDER/include/cnet/FOLDER/*) is named in its folder's README, which is where a
# reader looks for a library's public surface.
#   public_headers_documented_test.sh SOURCE_DIR
set -euo pipefail
cd "$1"
missing=()
for header in */include/cnet/*/*; do
  folder=${header%%/*}
  name=$(basename "$header")
  grep -qF "$name" "$folder/README.md" || missing+=("$folder/README.md lacks $name")
done
((${#missing[@]} == 0)) || { printf 'FAIL: %s\n' "${missing[@]}" >&2; exit 1; }
echo "ok: every public header is named in its folder's README"
