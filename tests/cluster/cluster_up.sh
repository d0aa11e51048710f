# Fixture set-up: a fresh cluster, even if an interrupted run left one behind in the same folder.
set -euo pipefail
"$CNET_MINICLUSTER" down >/dev/null
"$CNET_MINICLUSTER" up "$1"
