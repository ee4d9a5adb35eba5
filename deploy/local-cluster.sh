#!/bin/sh
# A local cluster on loopback: N `perceive serve` replicas behind nginx (deploy/nginx/).
#
#   deploy/local-cluster.sh up N PORT [MODEL] [-- SERVE_ARGS...]
#       starts replicas on ports PORT+1..PORT+N (MODEL: bevfusion by default) and nginx on PORT,
#       waits until each answers /health; nginx.conf is rendered from the template into the run dir
#   deploy/local-cluster.sh down              stops exactly what `up` started (SIGTERM: replicas
#                                             drain their requests in flight; nginx quits gracefully)
#   deploy/local-cluster.sh status            each replica's pid and /health, and nginx's
#   deploy/local-cluster.sh restart I         rolling restart of replica I (SIGTERM, wait, start, wait healthy)
#   deploy/local-cluster.sh kill I            SIGKILL replica I (a replica lost)
#   deploy/local-cluster.sh start I           start replica I again (after kill)
#
# Environment: PERCEIVE (the binary; build/perceive), PERCEIVE_CLUSTER_DIR (the run dir with
# nginx.conf, pid files, logs; default ${TMPDIR:-/tmp}/perceive-cluster), PERCEIVE_NGINX (the nginx binary; nginx itself reads NGINX).
# Nothing runs as root that need not: every file is under the run dir.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
run=${PERCEIVE_CLUSTER_DIR:-${TMPDIR:-/tmp}/perceive-cluster}
perceive=${PERCEIVE:-$src/build/perceive}
nginx=${PERCEIVE_NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}

die() { echo "local-cluster: $*" >&2; exit 1; }

# alive PIDFILE WORD: the pid in PIDFILE is running and its command line contains WORD (a
# recycled pid of some other program is never signalled)
alive() {
    [ -r "$1" ] || return 1
    pid=$(cat "$1")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"
}

health() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1/health" 2>/dev/null || true; }

wait_health() {   # PORT SECONDS PIDFILE WORD
    t=0
    while [ "$t" -lt $(($2 * 10)) ]; do
        [ "$(health "$1")" = 200 ] && return 0
        alive "$3" "$4" || return 1
        sleep 0.1
        t=$((t + 1))
    done
    return 1
}

load_state() {
    [ -r "$run/cluster.env" ] || die "no cluster in $run (run: $0 up N PORT)"
    . "$run/cluster.env"
}

start_replica() {   # I
    port=$((PORT + $1))
    # shellcheck disable=SC2086
    setsid "$perceive" serve "$MODEL" --port "$port" $SERVE_ARGS > "$run/replica-$1.out" 2> "$run/replica-$1.log" < /dev/null &
    echo $! > "$run/replica-$1.pid"
}

stop_pid() {   # PIDFILE WORD SIGNAL SECONDS
    alive "$1" "$2" || { rm -f "$1"; return 0; }
    pid=$(cat "$1")
    kill "-$3" "$pid" 2>/dev/null || true
    t=0
    while kill -0 "$pid" 2>/dev/null && [ "$t" -lt $(($4 * 10)) ]; do sleep 0.1; t=$((t + 1)); done
    if kill -0 "$pid" 2>/dev/null; then
        echo "local-cluster: pid $pid did not stop in $4 s: SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$1"
}

render() {
    servers="" sservers="" routes=""
    r=1
    while [ "$r" -le "$N" ]; do
        p=$((PORT + r))
        servers="$servers        server 127.0.0.1:$p max_fails=1 fail_timeout=3s;
"
        sservers="$sservers        server 127.0.0.1:$p max_fails=0;
"
        routes="$routes        location = /replica/$r/metrics { proxy_pass http://127.0.0.1:$p/metrics; }
        location = /replica/$r/health { proxy_pass http://127.0.0.1:$p/health; }
"
        r=$((r + 1))
    done
    user_line=""
    [ "$(id -u)" = 0 ] && user_line="user root;"   # workers keep access to the run dir
    SERVERS=$servers STREAM_SERVERS=$sservers ROUTES=$routes awk -v run="$run" -v listen="127.0.0.1:$PORT" -v user="$user_line" -v mb="$MAX_BODY_MB" '
        /^@SERVERS@$/ { printf "%s", ENVIRON["SERVERS"]; next }
        /^@STREAM_SERVERS@$/ { printf "%s", ENVIRON["STREAM_SERVERS"]; next }
        /^@REPLICA_ROUTES@$/ { printf "%s", ENVIRON["ROUTES"]; next }
        /^@USER_LINE@$/ { print user; next }
        { gsub(/@RUN_DIR@/, run); gsub(/@LISTEN@/, listen); gsub(/@MAX_BODY_MB@/, mb); print }
    ' "$here/nginx/perceive.conf.template" > "$run/nginx.conf"
}

cmd_up() {
    [ $# -ge 2 ] || die "usage: $0 up N PORT [MODEL] [-- SERVE_ARGS...]"
    N=$1 PORT=$2
    shift 2
    MODEL=bevfusion
    if [ $# -gt 0 ] && [ "$1" != "--" ]; then MODEL=$1; shift; fi
    [ $# -gt 0 ] && [ "$1" = "--" ] && shift
    SERVE_ARGS="$*"
    case $N in ''|*[!0-9]*) die "N: '$N' is not a number";; esac
    case $PORT in ''|*[!0-9]*) die "PORT: '$PORT' is not a number";; esac
    [ "$N" -ge 1 ] && [ "$N" -le 64 ] || die "N: $N is out of range [1, 64]"
    [ "$PORT" -ge 1 ] && [ $((PORT + N)) -le 65535 ] || die "PORT: $PORT (+ $N replicas) is out of range"
    [ -x "$perceive" ] || die "PERCEIVE: $perceive is not an executable (build it: make)"
    [ -x "$nginx" ] || die "nginx not found (Debian: apt-get install nginx-light)"
    command -v curl >/dev/null || die "curl not found"
    if [ -r "$run/cluster.env" ]; then
        (load_state; i=1; while [ "$i" -le "$N" ]; do alive "$run/replica-$i.pid" perceive && exit 0; i=$((i + 1)); done
         alive "$run/nginx.pid" nginx && exit 0; exit 1) && die "a cluster is running in $run (down first)"
    fi
    mkdir -p "$run/nginx-tmp"
    # the body limit nginx enforces is the replicas' (--max-body-mb, 64 by default)
    MAX_BODY_MB=$(echo " $SERVE_ARGS " | sed -n 's/.* --max-body-mb \([0-9]*\) .*/\1/p')
    MAX_BODY_MB=${MAX_BODY_MB:-64}
    cat > "$run/cluster.env" <<EOS
N=$N
PORT=$PORT
MODEL='$MODEL'
SERVE_ARGS='$SERVE_ARGS'
MAX_BODY_MB=$MAX_BODY_MB
EOS
    render
    "$nginx" -t -q -p "$run" -c "$run/nginx.conf" -e "$run/nginx-error.log" || die "nginx -t failed on $run/nginx.conf"
    i=1
    while [ "$i" -le "$N" ]; do start_replica "$i"; i=$((i + 1)); done
    i=1
    while [ "$i" -le "$N" ]; do
        wait_health $((PORT + i)) 300 "$run/replica-$i.pid" perceive ||
            { echo "local-cluster: replica $i did not become healthy; its log:" >&2; tail -5 "$run/replica-$i.log" >&2; cmd_down; exit 1; }
        i=$((i + 1))
    done
    # nginx's own output to a file: a daemon holding the caller's pipes open would hang `$(...)`
    "$nginx" -p "$run" -c "$run/nginx.conf" -e "$run/nginx-error.log" > "$run/nginx.out" 2>&1 < /dev/null ||
        { cat "$run/nginx.out" >&2; cmd_down; die "nginx did not start"; }
    wait_health "$PORT" 10 "$run/nginx.pid" nginx || { cmd_down; die "nginx does not answer on $PORT"; }
    echo "local-cluster: $N replica(s) of $MODEL behind http://127.0.0.1:$PORT (run dir $run)"
}

cmd_down() {
    load_state
    if alive "$run/nginx.pid" nginx; then stop_pid "$run/nginx.pid" nginx QUIT 30; fi
    i=1
    while [ "$i" -le "$N" ]; do stop_pid "$run/replica-$i.pid" perceive TERM 60; i=$((i + 1)); done
    rm -f "$run/cluster.env"
    echo "local-cluster: stopped"
}

cmd_status() {
    load_state
    bad=0
    i=1
    while [ "$i" -le "$N" ]; do
        p=$((PORT + i))
        if alive "$run/replica-$i.pid" perceive; then
            h=$(health "$p")
            echo "replica $i: pid $(cat "$run/replica-$i.pid") port $p health $h"
            [ "$h" = 200 ] || bad=1
        else
            echo "replica $i: port $p not running"
            bad=1
        fi
        i=$((i + 1))
    done
    if alive "$run/nginx.pid" nginx; then echo "nginx: pid $(cat "$run/nginx.pid") port $PORT health $(health "$PORT")"
    else echo "nginx: not running"; bad=1; fi
    return $bad
}

replica_arg() {
    load_state
    case ${1:-} in ''|*[!0-9]*) die "replica: '${1:-}' is not a number";; esac
    [ "$1" -ge 1 ] && [ "$1" -le "$N" ] || die "replica: $1 is out of range [1, $N]"
}

case ${1:-} in
    up) shift; cmd_up "$@" ;;
    down) cmd_down ;;
    status) cmd_status ;;
    kill) replica_arg "${2:-}"; alive "$run/replica-$2.pid" perceive && kill -KILL "$(cat "$run/replica-$2.pid")"; rm -f "$run/replica-$2.pid" ;;
    start) replica_arg "${2:-}"; alive "$run/replica-$2.pid" perceive && die "replica $2 is running"
           start_replica "$2"; wait_health $((PORT + $2)) 300 "$run/replica-$2.pid" perceive || die "replica $2 did not become healthy" ;;
    restart) replica_arg "${2:-}"; stop_pid "$run/replica-$2.pid" perceive TERM 60
             start_replica "$2"; wait_health $((PORT + $2)) 300 "$run/replica-$2.pid" perceive || die "replica $2 did not become healthy" ;;
    *) echo "usage: $0 up N PORT [MODEL] [-- SERVE_ARGS...] | down | status | restart I | kill I | start I" >&2; exit 2 ;;
esac
