#!/usr/bin/env bash
# Serve Headlight with several app processes behind HAProxy (cookie-sticky), for a lecture hall on one machine.
#
#   deploy/serve.sh [--procs N] [--port 8501] [--base-port 8601] [--warm]      (make serve)
#
# Starts HAProxy on 127.0.0.1:PORT (HEADLIGHT_BIND=0.0.0.0:8501 to let a classroom's network in) with cookie
# stickiness (deploy/haproxy.cfg) and N Streamlit processes of app.py (default: the number of CPU cores) on
# 127.0.0.1:BASE.. (headless, no file watcher, one torch thread each); each joins the balancer when it is ready
# (/_headlight/ready: its modules imported and its models loaded, serve/preload.py, ~3 s). HAProxy answers at once:
# until then a browser gets a page that reloads itself every second, in its
# language, instead of a refused connection. --warm also runs every page once in each process before they are marked
# ready (no faster for a lecture hall, measured; ready ~1 s later). Ctrl-C / TERM stops everything it
# started; an app process that dies is started again (its students reconnect to the others meanwhile); if HAProxy
# dies, the rest are stopped too. Logs: $HEADLIGHT_RUN_DIR (default a new
# /tmp/headlight-serve.* folder).
#
# Environment: HEADLIGHT_PROCS, HEADLIGHT_BIND, HEADLIGHT_BASE_PORT, HEADLIGHT_CACHE_MB (per process),
# HEADLIGHT_PUBLIC_URL (the share dialog's link host), HEADLIGHT_LECTURER_KEY (the Class page's key: generated and
# printed when unset), HEADLIGHT_CLASS_DB (postgresql://... for several hosts; else SQLite in HEADLIGHT_DATA_DIR,
# default .headlight/), HEADLIGHT_RESPAWN_MIN_S (an app process dying sooner after its start stops everything; 10),
# PY (the Python with Streamlit, default .venv/bin/python).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PY:-$ROOT/.venv/bin/python}"
PROCS="${HEADLIGHT_PROCS:-$(nproc 2>/dev/null || echo 2)}"
PORT="${PORT:-8501}"
BASE="${HEADLIGHT_BASE_PORT:-8601}"
WARM=0
READY_S="${HEADLIGHT_READY_S:-180}"

usage() { sed -n '2,/^set -euo/{/^#/p}' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        -n|--procs) PROCS="$2"; shift 2 ;;
        -p|--port) PORT="$2"; shift 2 ;;
        -b|--base-port) BASE="$2"; shift 2 ;;
        --warm) WARM=1; shift ;;
        --no-warm) WARM=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "serve.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
[[ "$PROCS" =~ ^[1-9][0-9]*$ ]] || { echo "serve.sh: --procs must be a positive integer" >&2; exit 2; }
BIND="${HEADLIGHT_BIND:-127.0.0.1:$PORT}"
# HAProxy is a Debian package: installed here when missing (as .ci/run installs Chromium), as root or via sudo.
if ! command -v haproxy >/dev/null; then
    SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo -n"
    echo "serve.sh: haproxy not found, installing Debian's haproxy package" >&2
    if command -v apt-get >/dev/null && $SUDO apt-get update -q >&2 \
        && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q haproxy >&2; then :; else
        echo "serve.sh: could not install haproxy: run 'apt-get install haproxy' as root, then make serve" >&2; exit 1
    fi
fi
[[ -x "$PY" ]] || { echo "serve.sh: $PY not found: run make install first" >&2; exit 1; }
# The share dialog's short links (ui/share.py) must name a host the students' phones reach: the app processes listen on
# 127.0.0.1 behind HAProxy, so a BIND open to the network gives HEADLIGHT_PUBLIC_URL (this machine's LAN address and
# PORT) unless it is set already.
if [[ -z "${HEADLIGHT_PUBLIC_URL:-}" ]]; then
    HEADLIGHT_PUBLIC_URL="$("$PY" -m serve public-url "$BIND")" || HEADLIGHT_PUBLIC_URL=""
    export HEADLIGHT_PUBLIC_URL
fi

RUN_DIR="${HEADLIGHT_RUN_DIR:-$(mktemp -d /tmp/headlight-serve.XXXXXX)}"
mkdir -p "$RUN_DIR"
PIDS=()

cleanup() {
    local code=$?
    trap - EXIT INT TERM
    if [[ ${#PIDS[@]} -gt 0 ]]; then
        kill -TERM "${PIDS[@]}" 2>/dev/null || true
        for _ in $(seq 50); do  # up to 5 s for a clean exit
            local alive=0
            for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
            [[ $alive -eq 0 ]] && break
            sleep 0.1
        done
        kill -KILL "${PIDS[@]}" 2>/dev/null || true
        wait "${PIDS[@]}" 2>/dev/null || true
    fi
    echo "serve.sh: stopped (logs in $RUN_DIR)" >&2
    exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One secret for all processes: a browser that fails over to another process keeps a valid XSRF cookie.
export STREAMLIT_SERVER_COOKIE_SECRET="${STREAMLIT_SERVER_COOKIE_SECRET:-$("$PY" -m serve cookie-secret)}"
# One lecturer key for all processes (the Class page, /_headlight/class/...): a new one when unset, printed here only.
if [[ -z "${HEADLIGHT_LECTURER_KEY:-}" ]]; then
    HEADLIGHT_LECTURER_KEY="$("$PY" -m serve lecturer-key)"
    echo "serve.sh: lecturer key for the Class page (new at each start; set HEADLIGHT_LECTURER_KEY to keep one): $HEADLIGHT_LECTURER_KEY" >&2
fi
export HEADLIGHT_LECTURER_KEY
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" HEADLIGHT_TORCH_THREADS="${HEADLIGHT_TORCH_THREADS:-1}"

# The app processes first (they take longest to be ready), then the balancer, so the port answers at once: until an
# app process answers /_stcore/health, every request gets a page that reloads itself ("Headlight is starting", in
# the browser's language) instead of a refused connection. The processes are listed in maintenance and enabled
# through HAProxy's admin socket once /_headlight/ready says the process has imported its modules and loaded its
# models (serve/preload.py; Streamlit's server itself answers ~1 s after the start, the preload takes ~3 s).
export HEADLIGHT_RUN_DIR="$RUN_DIR"
SERVERS=""
declare -A APP_PID APP_STARTED  # app index -> its process, when it was (re)started (SECONDS)
start_app() {  # app process $1 on its port, its log appended
    local i=$1
    "$PY" -m serve run app.py --server.headless true --server.address 127.0.0.1 --server.port "$((BASE + i - 1))" \
        --server.fileWatcherType none --server.runOnSave false --browser.gatherUsageStats false \
        >>"$RUN_DIR/app$i.log" 2>&1 &
    APP_PID[$i]=$!
    APP_STARTED[$i]=$SECONDS
    PIDS+=($!)
}
for i in $(seq 1 "$PROCS"); do
    start_app "$i"
    SERVERS+="    server app$i 127.0.0.1:$((BASE + i - 1)) cookie app$i disabled"$'\n'
done
for lang in en ko; do
    "$PY" -m serve starting-page "$lang" >"$RUN_DIR/starting.$lang.html"
done
{ cat deploy/haproxy.cfg; printf '%s' "$SERVERS"; } >"$RUN_DIR/haproxy.cfg"
HEADLIGHT_BIND="$BIND" haproxy -c -q -f "$RUN_DIR/haproxy.cfg"
HEADLIGHT_BIND="$BIND" haproxy -db -f "$RUN_DIR/haproxy.cfg" >"$RUN_DIR/haproxy.log" 2>&1 &
HAPROXY_PID=$!
PIDS+=($!)
echo "serve.sh: http://$BIND answers now (a starting page); $PROCS app processes on 127.0.0.1:$BASE..$((BASE + PROCS - 1)) are starting" >&2

deadline=$((SECONDS + READY_S))
for i in $(seq 1 "$PROCS"); do
    port=$((BASE + i - 1))
    until curl -fs -o /dev/null --max-time 2 "http://127.0.0.1:$port/_headlight/ready" 2>/dev/null; do
        for p in "${PIDS[@]}"; do
            kill -0 "$p" 2>/dev/null || { echo "serve.sh: a process exited; see $RUN_DIR/*.log" >&2; exit 1; }
        done
        (( SECONDS < deadline )) || { echo "serve.sh: app on port $port not healthy after ${READY_S} s" >&2; exit 1; }
        sleep 0.1
    done
done

if [[ $WARM -eq 1 ]]; then
    WARM_PIDS=()
    for i in $(seq 1 "$PROCS"); do  # one student per page, in every process at once
        "$PY" bench/loadtest.py --url "http://127.0.0.1:$((BASE + i - 1))" --students 7 --pages all --ramp 0.5 \
            --timeout 120 --cpu-per-page 0 >"$RUN_DIR/warm$i.log" 2>&1 &
        WARM_PIDS+=($!)
    done
    for i in "${!WARM_PIDS[@]}"; do
        wait "${WARM_PIDS[$i]}" || echo "serve.sh: warm-up of app$((i + 1)) reported errors ($RUN_DIR/warm$((i + 1)).log)" >&2
    done
fi

haproxy_admin() {  # one command on HAProxy's admin socket (serve/haproxy.py)
    "$PY" -m serve haproxy "$RUN_DIR/haproxy.sock" "$1"
}
for i in $(seq 1 "$PROCS"); do
    out="$(haproxy_admin "set server headlight_apps/app$i state ready")$(haproxy_admin "set server headlight_apps/app$i health up")"
    [[ -z "$out" ]] || echo "serve.sh: HAProxy said: $out" >&2
done
echo "serve.sh: Headlight ready on http://$BIND ($PROCS processes behind HAProxy$([[ $WARM -eq 1 ]] && echo ", warmed up")); Ctrl-C stops it" >&2

# Stop with the parent too (`make serve` stopped by a TERM to make alone would otherwise leave us running).
PARENT=$PPID
( while kill -0 "$PARENT" 2>/dev/null; do sleep 1; done ) &
PIDS+=($!)

# Run until HAProxy or the parent watcher exits (or Ctrl-C / TERM); then the EXIT trap stops the others. An app
# process that dies (killed, out of memory) is started again on its port: meanwhile HAProxy sends its students to the
# other processes (option redispatch: their pages reconnect there); the new one is kept in maintenance until it is
# ready, as at the start. One that dies within RESPAWN_MIN_S of its start (a broken install) stops everything.
RESPAWN_MIN_S="${HEADLIGHT_RESPAWN_MIN_S:-10}"
set +e
stopping() {  # a stop of the whole group (Ctrl-C, a TERM to all) reaches the apps too: no restart then
    sleep 0.3
    ! kill -0 "$HAPROXY_PID" 2>/dev/null || ! kill -0 "$PARENT" 2>/dev/null
}
while true; do
    wait -n "${PIDS[@]}"
    code=$?
    if stopping; then
        echo "serve.sh: a process exited (code $code); stopping the others" >&2
        exit 1
    fi
    alive=()
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive+=("$p"); done
    PIDS=("${alive[@]}")
    dead=()
    for i in $(seq 1 "$PROCS"); do kill -0 "${APP_PID[$i]}" 2>/dev/null || dead+=("$i"); done
    if [[ ${#dead[@]} -eq 0 ]]; then  # HAProxy or the parent watcher
        echo "serve.sh: a process exited (code $code); stopping the others" >&2
        exit 1
    fi
    for i in "${dead[@]}"; do
        if (( SECONDS - APP_STARTED[$i] < RESPAWN_MIN_S )); then
            echo "serve.sh: app$i exited ${RESPAWN_MIN_S} s or less after its start; stopping the others (see $RUN_DIR/app$i.log)" >&2
            exit 1
        fi
        echo "serve.sh: app$i exited (code $code); its students go to the other processes; starting it again" >&2
        haproxy_admin "set server headlight_apps/app$i state maint" >/dev/null
        start_app "$i"
    done
    for i in "${dead[@]}"; do
        port=$((BASE + i - 1))
        deadline=$((SECONDS + READY_S))
        until curl -fs -o /dev/null --max-time 2 "http://127.0.0.1:$port/_headlight/ready" 2>/dev/null; do
            kill -0 "${APP_PID[$i]}" 2>/dev/null || break
            kill -0 "$HAPROXY_PID" 2>/dev/null || exit 1
            (( SECONDS < deadline )) || break
            sleep 0.1
        done
        kill -0 "$HAPROXY_PID" 2>/dev/null || exit 1
        out="$(haproxy_admin "set server headlight_apps/app$i state ready")$(haproxy_admin "set server headlight_apps/app$i health up")"
        [[ -z "$out" ]] || echo "serve.sh: HAProxy said: $out" >&2
        echo "serve.sh: app$i ready again" >&2
    done
done
