#!/bin/sh
# Soak: C clients POST /predict without pause for D seconds through nginx in front of N replicas
# (deploy/local-cluster.sh), or against one `perceive serve` directly (--direct, or when the
# cluster script is absent). Every 10 s it samples each replica's RSS (/proc/PID/status VmRSS);
# at the end it prints requests, answers by status, errors (anything not 200, curl failures),
# throughput and, per replica, RSS first/min/max/last after the warm-up. Exit 1 when a request
# failed or an RSS moved by more than the tolerance after warm-up (flat = (max - min) / min).
#
#   bench/soak.sh [--duration 1800] [--conns 8] [--replicas 2] [--port 18700] [--warmup 120]
#                 [--tolerance 5] [--file F] [--content-type T] [--perceive BUILD/perceive]
#                 [--serve-args "--workers 1 --queue 16"] [--direct] [--out DIR]
# Each client is a loop of curl runs of 2 requests on one kept-alive connection (a short batch,
# so the clients stop soon after the deadline).
# Runs with `nice`; stops what it started on exit (Ctrl-C included).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
duration=1800 conns=8 replicas=2 port=18700 warmup=120 tol=5 direct=0 out=""
file=$src/tests/fixtures/bevfusion/scene/scene_000.pcd
ctype=application/x-pcd
perceive=$src/build/perceive
serve_args="--workers 1 --queue 16"
while [ $# -gt 0 ]; do
    case $1 in
        --duration) duration=$2; shift 2 ;;
        --conns) conns=$2; shift 2 ;;
        --replicas) replicas=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --tolerance) tol=$2; shift 2 ;;
        --file) file=$2; shift 2 ;;
        --content-type) ctype=$2; shift 2 ;;
        --perceive) perceive=$2; shift 2 ;;
        --serve-args) serve_args=$2; shift 2 ;;
        --direct) direct=1; shift ;;
        --out) out=$2; shift 2 ;;
        *) echo "soak.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
for v in "$duration" "$conns" "$replicas" "$port" "$warmup" "$tol"; do
    case $v in ''|*[!0-9]*) echo "soak.sh: '$v' is not a number" >&2; exit 2 ;; esac
done
command -v curl >/dev/null || { echo "soak.sh: curl is not installed" >&2; exit 2; }
[ -r "$file" ] || { echo "soak.sh: cannot read $file" >&2; exit 2; }
[ -x "$perceive" ] || { echo "soak.sh: $perceive is not an executable (make)" >&2; exit 2; }
cluster=$src/deploy/local-cluster.sh
[ -x "$cluster" ] || direct=1
out=${out:-$(mktemp -d)}
mkdir -p "$out"
export PERCEIVE="$perceive" PERCEIVE_CLUSTER_DIR="$out/cluster"
pids=""        # replica pids
direct_pid=""
cleanup() {
    trap - EXIT INT TERM
    for c in $clients; do kill "$c" 2>/dev/null || true; done
    if [ "$direct" = 1 ]; then
        [ -n "$direct_pid" ] && kill -TERM "$direct_pid" 2>/dev/null && wait "$direct_pid" 2>/dev/null || true
    else
        "$cluster" down >/dev/null 2>&1 || true
    fi
}
clients=""
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$direct" = 1 ]; then
    # shellcheck disable=SC2086
    nice -n 10 "$perceive" serve bevfusion --port "$port" $serve_args > "$out/serve.out" 2> "$out/serve.log" &
    direct_pid=$!
    t=0
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" || true)" = 200 ]; do
        sleep 1; t=$((t + 1))
        [ $t -lt 300 ] && kill -0 "$direct_pid" 2>/dev/null || { echo "soak.sh: the server did not start" >&2; tail -5 "$out/serve.log" >&2; exit 1; }
    done
    pids=$direct_pid
    mode="perceive serve directly (port $port)"
else
    # shellcheck disable=SC2086
    nice -n 10 "$cluster" up "$replicas" "$port" bevfusion -- $serve_args > "$out/cluster.log" 2>&1 ||
        { echo "soak.sh: cluster did not come up" >&2; cat "$out/cluster.log" >&2; exit 1; }
    i=1
    while [ "$i" -le "$replicas" ]; do pids="$pids $(cat "$PERCEIVE_CLUSTER_DIR/replica-$i.pid")"; i=$((i + 1)); done
    mode="nginx on $port in front of $replicas replica(s) (deploy/local-cluster.sh)"
fi
url="http://127.0.0.1:$port/predict?timing=0"
end=$(( $(date +%s) + duration ))
echo "soak: $conns client(s) for ${duration}s through $mode; file $(basename "$file"); RSS every 10 s; out $out"

# one client: batches of 2 requests on one connection until the deadline; one status per line
client() {   # K
    while [ "$(date +%s)" -lt "$end" ]; do
        nice -n 5 curl -s -o /dev/null -w '%{http_code}\n' --max-time 300 -H "Content-Type: $ctype" \
            --data-binary "@$file" "$url#c$1-[1-2]" >> "$out/codes.$1" 2>> "$out/curl.$1" || echo "curl-$?" >> "$out/codes.$1"
    done
}
k=1
while [ "$k" -le "$conns" ]; do client "$k" & clients="$clients $!"; k=$((k + 1)); done

: > "$out/rss.tsv"
t0=$(date +%s)
while [ "$(date +%s)" -lt "$end" ]; do
    line="$(( $(date +%s) - t0 ))"
    for p in $pids; do
        r=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)
        line="$line	${r:-0}"
    done
    echo "$line" >> "$out/rss.tsv"
    sleep 10
done
for c in $clients; do wait "$c" 2>/dev/null || true; done
clients=""
elapsed=$(( $(date +%s) - t0 ))

cat "$out"/codes.* > "$out/codes.all" 2>/dev/null || : > "$out/codes.all"
total=$(wc -l < "$out/codes.all")
ok=$(grep -c '^200$' "$out/codes.all" || true)
errors=$((total - ok))
echo "soak: $total requests in ${elapsed}s ($(awk -v n="$total" -v s="$elapsed" 'BEGIN { printf "%.2f", s ? n / s : 0 }') req/s), 200: $ok, errors: $errors"
sort "$out/codes.all" | uniq -c | awk '{ printf "  status %s: %d\n", $2, $1 }'
# RSS per replica over the samples after the warm-up (kB)
status=0
[ "$errors" -eq 0 ] || status=1
n=$(echo $pids | wc -w)
i=1
while [ "$i" -le "$n" ]; do
    res=$(awk -v c=$((i + 1)) -v w="$warmup" -v tol="$tol" '
        $1 >= w { v = $c; if (!seen++) { first = v; mn = v; mx = v } if (v < mn) mn = v; if (v > mx) mx = v; last = v }
        END { if (!seen) { print "no samples after the warm-up"; exit 1 }
              d = mn ? 100 * (mx - mn) / mn : 0
              printf "%d samples: first %.1f MiB, min %.1f, max %.1f, last %.1f; spread %.2f%% (tolerance %s%%)\n",
                     seen, first / 1024, mn / 1024, mx / 1024, last / 1024, d, tol
              exit d > tol }' "$out/rss.tsv") || status=1
    echo "  replica $i RSS after ${warmup}s: $res"
    i=$((i + 1))
done
[ "$status" = 0 ] && echo "soak: PASS" || echo "soak: FAIL"
exit $status
