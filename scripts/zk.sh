#!/usr/bin/env bash
# scripts/zk.sh: a throwaway single-node ZooKeeper for tests (Debian `zookeeper` package).
#
#   scripts/zk.sh start <dir> [port] [owner-pid]
#       Installs the Debian package with apt-get if it is missing, writes <dir>/zoo.cfg,
#       starts ZooKeeper on 127.0.0.1:<port> (port 0 or absent: a free port), waits for `imok`
#       (at most 60 s) and prints "127.0.0.1:<port>" on stdout. With owner-pid, a watchdog stops
#       ZooKeeper when that process exits (test binaries pass their own pid, so no server leaks).
#   scripts/zk.sh stop <dir>
#       Stops the server started in <dir> and waits for it to exit.
#   scripts/zk.sh install
#       Only installs the package.
#
# Exit status: 0 on success; 2 if ZooKeeper cannot be installed; 1 on other failures.
# Recipe and timings: docs/measured-here.md §4.
set -euo pipefail

# BK_ZK_JAR / BK_ZK_NO_INSTALL=1 exist to exercise the "cannot install" path of the tests.
ZK_JAR=${BK_ZK_JAR:-/usr/share/java/zookeeper.jar}

install_zk() {
    if [ -f "$ZK_JAR" ] && command -v java >/dev/null 2>&1; then
        return 0
    fi
    if [ -n "${BK_ZK_NO_INSTALL:-}" ]; then return 2; fi
    echo "zk.sh: installing the Debian zookeeper package" >&2
    local sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
    (
        exec 9>/tmp/bk-zk-apt.lock
        flock 9
        if [ ! -f "$ZK_JAR" ]; then
            $sudo apt-get update -qq >&2 &&
                DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends zookeeper >&2
        fi
    ) || return 2
    [ -f "$ZK_JAR" ] || return 2
}

# A port for `start <dir> 0`: from 32000-32767, below the kernel's ephemeral range (32768 up by
# default), where bind-to-0 and every outgoing connection take their ports and a port just
# released is handed out again (a test's client could take it as its source port before
# ZooKeeper binds it). The tests' own helpers hand out 20000-31999 (bookie/tests/ports,
# bkbench::ports, tests/pulsar/launcher.sh), so this range is ZooKeeper's alone.
free_port() {
    local p _
    for _ in $(seq 1 2000); do
        p=$((32000 + RANDOM % 768))
        if command -v python3 >/dev/null 2>&1; then
            if python3 -c 'import socket, sys; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.close()' "$p" 2>/dev/null; then
                echo "$p"
                return 0
            fi
        elif ! { exec 3<>/dev/tcp/127.0.0.1/"$p"; } 2>/dev/null; then
            # No python: a port that refuses connections is taken as free.
            echo "$p"
            return 0
        else
            exec 3>&- 3<&-
        fi
    done
    echo "zk.sh: no free port in 32000-32767" >&2
    return 1
}

ruok() {
    local port=$1 r
    r=$({ exec 3<>/dev/tcp/127.0.0.1/"$port" && echo ruok >&3 && timeout 2 cat <&3; } 2>/dev/null) || return 1
    [ "$r" = imok ]
}

cmd=${1:-}
case "$cmd" in
install)
    install_zk || exit 2
    ;;
start)
    dir=${2:?usage: zk.sh start <dir> [port] [owner-pid]}
    port=${3:-0}
    owner=${4:-}
    install_zk || { echo "zk.sh: cannot install ZooKeeper" >&2; exit 2; }
    mkdir -p "$dir/data"
    dir=$(cd "$dir" && pwd)
    if [ "$port" = 0 ]; then port=$(free_port) || exit 1; fi
    cat >"$dir/zoo.cfg" <<EOF
tickTime=2000
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,dump
maxClientCnxns=0
EOF
    nohup java -Xmx256m -cp /etc/zookeeper/conf:$ZK_JAR \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" >"$dir/zk.out" 2>&1 &
    zkpid=$!
    echo "$zkpid" >"$dir/zk.pid"
    if [ -n "$owner" ]; then
        # Watchdog: stop ZooKeeper when the owner process goes away.
        nohup bash -c "while kill -0 $owner 2>/dev/null && kill -0 $zkpid 2>/dev/null; do sleep 1; done; kill $zkpid 2>/dev/null; sleep 3; rm -rf '$dir/data'" \
            >/dev/null 2>&1 &
    fi
    for _ in $(seq 1 600); do
        if ruok "$port"; then
            echo "127.0.0.1:$port"
            exit 0
        fi
        if ! kill -0 "$zkpid" 2>/dev/null; then
            echo "zk.sh: ZooKeeper exited; log follows" >&2
            tail -20 "$dir/zk.out" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "zk.sh: ZooKeeper did not answer imok within 60 s" >&2
    kill "$zkpid" 2>/dev/null || true
    exit 1
    ;;
stop)
    dir=${2:?usage: zk.sh stop <dir>}
    [ -f "$dir/zk.pid" ] || exit 0
    pid=$(cat "$dir/zk.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || exit 0
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    ;;
*)
    echo "usage: zk.sh start <dir> [port] [owner-pid] | stop <dir> | install" >&2
    exit 1
    ;;
esac
