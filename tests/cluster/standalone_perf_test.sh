#!/usr/bin/env bash
# cnet-perf -s / -c between two processes by hand (TCP bootstrap on loopback): the server listens on
# loopback unless told otherwise; garbage, a peer with the wrong key and a peer trickling bytes are each
# turned away within the introduction deadline, reported with their text escaped, and the server goes
# on waiting; then a client with the key is served and both sides print the same numbers. --nic picks the
# interface (listening address and UCX device) and is named in the header.
set -euo pipefail
: "${CNET_BIN:?run through ctest}"
fail() { echo "FAIL: $*" >&2; exit 1; }
port=$((30000 + RANDOM % 20000))
log=$(mktemp)
keyfile=$(mktemp)
trap 'rm -f "$log" "$keyfile"; kill $server 2>/dev/null || true' EXIT
echo "0123456789abcdef-test-key" >"$keyfile"

"$CNET_BIN/cnet-perf" -s --port $port --key-file "$keyfile" --max-size 4096 --iters 20 --wait 60 >"$log" 2>&1 &
server=$!
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
[[ $(ss -Htln "sport = :$port" | awk '{print $4}') == "127.0.0.1:$port" ]] || fail "not listening on loopback only: $(ss -Htln "sport = :$port")"
# An HTTP request; random bytes; the right greeting with an absurd key length; a key name with a
# terminal escape in it. The server may hang up mid-write (that is the point): failed writes are expected.
(exec 3<>/dev/tcp/127.0.0.1/$port; printf 'GET / HTTP/1.0\r\n\r\n' >&3; sleep 0.2) 2>/dev/null || true
(exec 3<>/dev/tcp/127.0.0.1/$port; head -c 4096 /dev/urandom >&3; sleep 0.2) 2>/dev/null || true
(exec 3<>/dev/tcp/127.0.0.1/$port; printf 'CNETBS02\xff\xff\xff\x7f' >&3; sleep 0.2) 2>/dev/null || true
(exec 3<>/dev/tcp/127.0.0.1/$port; printf 'CNETBS02\x09\x00\x00\x00\x1b[31mevil' >&3; sleep 0.2) 2>/dev/null || true
# A peer that sends one byte every 1.5 s must not hold the server past its introduction deadline.
start=$SECONDS
(exec 3<>/dev/tcp/127.0.0.1/$port; for c in C N E T B S 0 2 x x; do printf %s "$c" >&3 || break; sleep 1.5; done) 2>/dev/null || true
((SECONDS - start < 12)) || fail "a trickling peer held the connection for $((SECONDS - start)) s"
# The right protocol, the wrong key: refused on both sides, with the reason.
rc=0
err=$(CNET_PERF_KEY=wrong-key-but-long-enough "$CNET_BIN/cnet-perf" -c --server-ip 127.0.0.1 --port $port --wait 10 2>&1) || rc=$?
[[ $rc == 3 && $err == *"did not accept this key"* ]] || fail "a wrong key: rc $rc, $err"

out=$("$CNET_BIN/cnet-perf" -c --server-ip 127.0.0.1 --port $port --key-file "$keyfile" --max-size 4096 --iters 20 --wait 10)
echo "$out"
wait $server || fail "the server failed: $(cat "$log")"
cat "$log"
rows='^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$'
[[ $(grep -cE "$rows" <<<"$out") == 5 ]] || fail "client did not print 5 sizes (8 B..2 KiB)"
[[ $(grep -cE "$rows" "$log") == 5 ]] || fail "server did not print 5 sizes"
[[ $(grep -E "$rows" "$log") == "$(grep -E "$rows" <<<"$out")" ]] || fail "the two sides print different numbers"
[[ $(grep -c 'rejected a connection from 127.0.0.1' "$log") -ge 6 ]] || fail "bad connections not all reported"
grep -q 'frame key too long' "$log" || fail "absurd frame length not named"
grep -q "peer is at step '\\\\x1b\[31mevil'" "$log" || fail "the peer's text is not escaped in the log"
grep -q 'did not finish its message in time' "$log" || fail "the trickling peer is not named"
grep -q 'it does not know the key' "$log" || fail "the wrong key is not named"
! grep -q $'\x1b' "$log" || fail "an escape character reached the log"

rc=0
"$CNET_BIN/cnet-perf" -s --port $port --wait 1 2>"$log" || rc=$?
[[ $rc == 3 ]] && grep -q "no client connected to port $port within 1 s" "$log" || fail "lonely server: rc $rc, $(cat "$log")"
grep -q "no key given; start the client with CNET_PERF_KEY=[0-9a-f]\{32\}" "$log" || fail "a server without a key printed none: $(cat "$log")"
rc=0
"$CNET_BIN/cnet-perf" -c --port $port 2>/dev/null || rc=$?
[[ $rc == 2 ]] || fail "-c without --server-ip gave $rc"
rc=0
env -u CNET_PERF_KEY "$CNET_BIN/cnet-perf" -c --server-ip 127.0.0.1 --port $port 2>/dev/null || rc=$?
[[ $rc == 2 ]] || fail "-c without a key gave $rc"

# --nic: the server listens on that interface's address, both sides measure over it and say so; a NIC
# this host does not have is refused with the ones it has.
"$CNET_BIN/cnet-perf" -s --nic lo --port $port --key-file "$keyfile" --max-size 4096 --iters 20 --wait 60 >"$log" 2>&1 &
server=$!
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
out=$("$CNET_BIN/cnet-perf" -c --nic lo --server-ip 127.0.0.1 --port $port --key-file "$keyfile" --max-size 4096 --iters 20 --wait 10)
wait $server || fail "the --nic server failed: $(cat "$log")"
grep -q "^# cnet-perf p2p: .*, nic lo)" "$log" || fail "the header does not name the NIC: $(head -n 3 "$log")"
[[ $(grep -cE "$rows" <<<"$out") == 5 ]] || fail "the --nic client did not print 5 sizes"
rc=0
err=$("$CNET_BIN/cnet-perf" -s --nic no-such-nic0 --port $port 2>&1) || rc=$?
[[ $rc == 2 && $err == *"--nic no-such-nic0: no such network interface here (this host has: "*"lo"* ]] || fail "an unknown NIC: rc $rc, $err"
echo ok
