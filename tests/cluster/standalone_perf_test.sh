#!/usr/bin/env bash
# cnet-perf -s / -c between two processes by hand (TCP bootstrap on loopback): garbage and half-valid
# frames on the port are turned away without a crash, then a real client is served.
set -euo pipefail
: "${CNET_BIN:?run through ctest}"
fail() { echo "FAIL: $*" >&2; exit 1; }
port=$((30000 + RANDOM % 20000))
log=$(mktemp)
trap 'rm -f "$log"; kill $server 2>/dev/null || true' EXIT

"$CNET_BIN/cnet-perf" -s --bind 127.0.0.1 --port $port --max-size 4096 --iters 20 --wait 30 >"$log" 2>&1 &
server=$!
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
# an HTTP request; random bytes; the right greeting with an absurd key length. The server may hang up
# mid-write (that is the point), so a failed write here is expected.
(exec 3<>/dev/tcp/127.0.0.1/$port; printf 'GET / HTTP/1.0\r\n\r\n' >&3; sleep 0.2) 2>/dev/null || true
(exec 3<>/dev/tcp/127.0.0.1/$port; head -c 4096 /dev/urandom >&3; sleep 0.2) 2>/dev/null || true
(exec 3<>/dev/tcp/127.0.0.1/$port; printf 'CNETBS01\xff\xff\xff\x7f' >&3; sleep 0.2) 2>/dev/null || true

out=$("$CNET_BIN/cnet-perf" -c --server-ip 127.0.0.1 --port $port --max-size 4096 --iters 20 --wait 10)
echo "$out"
wait $server || fail "the server failed: $(cat "$log")"
cat "$log"
rows='^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$'
[[ $(grep -cE "$rows" <<<"$out") == 5 ]] || fail "client did not print 5 sizes (8 B..2 KiB)"
[[ $(grep -cE "$rows" "$log") == 5 ]] || fail "server did not print 5 sizes"
[[ $(grep -c 'rejected a connection from 127.0.0.1' "$log") -ge 3 ]] || fail "bad connections not all reported"
grep -q 'frame key too long' "$log" || fail "absurd frame length not named"

rc=0
"$CNET_BIN/cnet-perf" -s --bind 127.0.0.1 --port $port --wait 1 2>"$log" || rc=$?
[[ $rc == 3 ]] && grep -q "no client connected to port $port within 1 s" "$log" || fail "lonely server: rc $rc, $(cat "$log")"
rc=0
"$CNET_BIN/cnet-perf" -c --port $port 2>/dev/null || rc=$?
[[ $rc == 2 ]] || fail "-c without --server-ip gave $rc"
echo ok
