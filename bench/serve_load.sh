#!/bin/sh
# Load on `perceive serve` with wrk (Debian's): POST /predict of one point-cloud file at each
# connection level for a set time; records throughput, latency percentiles, answers by status
# (503 is the queue's backpressure, expected under overload; anything else non-2xx is an error),
# socket errors, and the server's RSS (/proc/PID/status) before and after each level.
#
#   bench/serve_load.sh [--duration 60] [--levels "1 8 64"] [--file F] [--content-type T]
#                       [--url http://127.0.0.1:PORT --pid PID | --perceive BUILD/perceive [--serve-args "..."]]
#                       [--out FILE.md]
# Without --url, it starts `perceive serve bevfusion --port 0` itself (and stops it with SIGTERM).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
duration=60
levels="1 8 64"
file=$src/tests/fixtures/bevfusion/scene/scene_000.pcd
ctype=application/x-pcd
url=""
pid=""
perceive=$src/build/perceive
serve_args="--queue 16 --workers 2"
out=""
while [ $# -gt 0 ]; do
    case $1 in
        --duration) duration=$2; shift 2 ;;
        --levels) levels=$2; shift 2 ;;
        --file) file=$2; shift 2 ;;
        --content-type) ctype=$2; shift 2 ;;
        --url) url=$2; shift 2 ;;
        --pid) pid=$2; shift 2 ;;
        --perceive) perceive=$2; shift 2 ;;
        --serve-args) serve_args=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "serve_load.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
command -v wrk >/dev/null || { echo "serve_load.sh: wrk is not installed (Debian: apt-get install wrk)" >&2; exit 2; }
[ -r "$file" ] || { echo "serve_load.sh: cannot read $file" >&2; exit 2; }
tmp=$(mktemp -d)
started=""
cleanup() {
    if [ -n "$started" ]; then kill -TERM "$started" 2>/dev/null || true; wait "$started" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if [ -z "$url" ]; then
    [ -x "$perceive" ] || { echo "serve_load.sh: no server: give --url and --pid, or --perceive BIN" >&2; exit 2; }
    # shellcheck disable=SC2086
    "$perceive" serve bevfusion --port 0 --quiet $serve_args >"$tmp/serve.out" 2>"$tmp/serve.err" &
    started=$!
    pid=$started
    i=0
    while ! grep -q "listening on" "$tmp/serve.out" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -gt 600 ] || ! kill -0 "$pid" 2>/dev/null; then echo "serve_load.sh: the server did not start" >&2; cat "$tmp/serve.err" >&2; exit 1; fi
        sleep 0.1
    done
    url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$tmp/serve.out")
fi
[ -n "$pid" ] && [ -r "/proc/$pid/status" ] || { echo "serve_load.sh: --pid of the server is needed for RSS" >&2; exit 2; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status"; }

# The request and a per-status tally (each wrk thread counts; done() sums them).
cat >"$tmp/post.lua" <<EOF
local f = assert(io.open(os.getenv("PV_LOAD_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*all")
f:close()
wrk.headers["Content-Type"] = os.getenv("PV_LOAD_CTYPE")
local threads = {}
function setup(thread) table.insert(threads, thread) end
ok, busy, other = 0, 0, 0
function response(status, headers, body)
    if status >= 200 and status < 300 then ok = ok + 1
    elseif status == 503 then busy = busy + 1
    else other = other + 1 end
end
function done(summary, latency, requests)
    local a, b, c = 0, 0, 0
    for _, t in ipairs(threads) do a = a + t:get("ok"); b = b + t:get("busy"); c = c + t:get("other") end
    io.write(string.format("tally: 2xx %d 503 %d other %d\n", a, b, c))
end
EOF

# warm the connection path once (the model warmed itself at load)
curl -s -o /dev/null -H "Content-Type: $ctype" --data-binary "@$file" "$url/predict" || true

{
    echo "perceive serve load: $(basename "$file") ($(wc -c <"$file") bytes), ${duration}s per level, $(nproc) CPUs, server: $url"
    echo
    echo "| conns | req/s | p50 | p90 | p99 | max | 2xx | 503 | other non-2xx | socket errors | RSS before (MB) | RSS after (MB) |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"
} >"$tmp/table"
for c in $levels; do
    t=2
    [ "$c" -lt 2 ] && t=1
    before=$(rss_kb)
    PV_LOAD_FILE=$file PV_LOAD_CTYPE=$ctype wrk -t "$t" -c "$c" -d "${duration}s" --timeout 120s --latency -s "$tmp/post.lua" \
        "$url/predict" >"$tmp/wrk.$c" 2>&1 || true
    after=$(rss_kb)
    w=$tmp/wrk.$c
    rps=$(awk '/^Requests\/sec:/ { print $2 }' "$w")
    pct() { awk -v p="$1" '$1 == p { print $2 }' "$w" | head -1; }
    maxl=$(awk '/^    Latency/ { print $4 }' "$w")
    tally=$(grep '^tally:' "$w" || echo "tally: 2xx ? 503 ? other ?")
    ok=$(echo "$tally" | awk '{ print $3 }'); busy=$(echo "$tally" | awk '{ print $5 }'); other=$(echo "$tally" | awk '{ print $7 }')
    sock=$(sed -n 's/^  Socket errors: //p' "$w")
    [ -n "$sock" ] || sock="none"
    echo "| $c | $rps | $(pct 50%) | $(pct 90%) | $(pct 99%) | $maxl | $ok | $busy | $other | $sock | $(awk -v k="$before" 'BEGIN { printf "%.1f", k / 1024 }') | $(awk -v k="$after" 'BEGIN { printf "%.1f", k / 1024 }') |" >>"$tmp/table"
    echo "--- wrk -c $c" >&2
    cat "$w" >&2
done
echo "" >>"$tmp/table"
echo "server peak RSS (VmHWM): $(awk -v k="$(hwm_kb)" 'BEGIN { printf "%.1f", k / 1024 }') MB" >>"$tmp/table"
cat "$tmp/table"
[ -n "$out" ] && cat "$tmp/table" >>"$out"
exit 0
