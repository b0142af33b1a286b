#!/usr/bin/env bash
# Install, start and stop a throw-away single-node SLURM on localhost, for the
# SLURM test (tests/test_slurm.py) and for trying profiles/slurm by hand.
#
#   tests/slurm/local_slurm.sh install   # apt-get install slurm-wlm munge (if missing)
#   tests/slurm/local_slurm.sh start     # munged, slurmctld, slurmd; waits for an idle node
#   tests/slurm/local_slurm.sh status    # sinfo + the daemons this script started
#   tests/slurm/local_slurm.sh stop      # cancels jobs, stops what `start` started, cleans up
#
# Needs root and Debian/Ubuntu packages; no systemd: the daemons are started
# directly and their process ids kept in $SLURM_TEST_STATE (default
# /var/tmp/sparsesvm-slurm), so `stop` ends exactly the daemons `start`
# started (a munged that was already running is left alone).
#
# Why the configuration looks like this (measured on Debian 12, SLURM 22.05):
# - it must be /etc/slurm/slurm.conf: Snakemake's SLURM job step removes the
#   SLURM_* variables, so SLURM_CONF does not reach `srun` inside a job.  An
#   existing slurm.conf that this script did not write is never overwritten.
# - no cgroups in containers: proctrack/linuxproc, task/none, jobacct_gather/none.
# - DefMemPerCPU, else one job without a memory request takes the whole node;
#   RealMemory no larger than `slurmd -C` reports, else the node is drained.
# - no accounting database, so `sacct` fails: Snakemake must use
#   `--slurm-status-command squeue`, which needs finished jobs to stay visible
#   (MinJobAge >= 3 x the plugin's first status-check delay).
set -euo pipefail

STATE=${SLURM_TEST_STATE:-/var/tmp/sparsesvm-slurm}
CONF=/etc/slurm/slurm.conf
MARKER="# written by sparsesvm tests/slurm/local_slurm.sh"
MEM_PER_CPU=${SLURM_TEST_MEM_PER_CPU:-2000}

die() { echo "local_slurm.sh: $*" >&2; exit 1; }

need_root() { [ "$(id -u)" = 0 ] || die "must run as root"; }

have_binaries() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
        && command -v munged >/dev/null && command -v sbatch >/dev/null
}

cmd_install() {
    need_root
    if have_binaries; then
        echo "slurm and munge already installed"
        return 0
    fi
    command -v apt-get >/dev/null || die "apt-get not found: install slurm-wlm and munge by hand"
    export DEBIAN_FRONTEND=noninteractive
    # a fresh container has no package lists: update once, only if needed
    # --no-install-recommends: the basic plugins are all this configuration needs
    if ! apt-get install -y -qq --no-install-recommends slurm-wlm munge; then
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends slurm-wlm munge
    fi
    have_binaries || die "slurm-wlm/munge installed but daemons not found"
}

# pid of a running process from a pid file, or nothing
pid_alive() {
    local f=$1 pid
    [ -s "$f" ] || return 1
    pid=$(cat "$f")
    kill -0 "$pid" 2>/dev/null && echo "$pid"
}

write_conf() {
    local host mem cpus
    host=$(hostname -s)
    # what slurmd sees on this machine; RealMemory must not exceed it
    cpus=$(slurmd -C | sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' | head -1)
    mem=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -1)
    [ -n "$cpus" ] && [ -n "$mem" ] || die "cannot read CPUs/RealMemory from slurmd -C"
    if [ -e "$CONF" ] && ! grep -qF "$MARKER" "$CONF"; then
        die "$CONF exists and was not written by this script; refusing to overwrite it"
    fi
    mkdir -p /etc/slurm
    cat > "$CONF" <<EOF
$MARKER
# single-node test cluster on localhost; removed again by 'local_slurm.sh stop'
ClusterName=sparsesvmtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$MEM_PER_CPU
MinJobAge=600
ReturnToService=2
InactiveLimit=0
KillWait=5
Waittime=0
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

cmd_start() {
    need_root
    have_binaries || die "slurm-wlm/munge not installed (run: $0 install)"
    if pid_alive "$STATE/slurmctld.pid" >/dev/null || pid_alive "$STATE/slurmd.pid" >/dev/null; then
        die "already started (state in $STATE); run '$0 stop' first"
    fi
    mkdir -p "$STATE/ctld" "$STATE/d"
    write_conf

    # munge: reuse a running munged, else start one as user munge
    if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
        echo "munged already running; leaving it alone"
        rm -f "$STATE/munged.pid"
    else
        install -d -o munge -g munge -m 0755 /run/munge
        [ -s /etc/munge/munge.key ] || die "/etc/munge/munge.key missing"
        runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
        cp /run/munge/munged.pid "$STATE/munged.pid"
        munge -n </dev/null | unmunge >/dev/null || die "munged does not answer"
    fi

    slurmctld -c   # -c: start clean, no state from an earlier run
    slurmd
    # wait until the node is idle (about 1 s)
    local state="" i
    for i in $(seq 1 60); do
        state=$(sinfo -h -N -o %t 2>/dev/null | head -1 || true)
        [ "$state" = idle ] && break
        if [ "$state" = drain ] || [ "$state" = drng ] || [ "$state" = down ]; then
            scontrol update nodename="$(hostname -s)" state=resume 2>/dev/null || true
        fi
        sleep 0.5
    done
    [ "$state" = idle ] || { tail -20 "$STATE/slurmctld.log" "$STATE/slurmd.log" >&2 || true;
                             die "node not idle after 30 s (state '$state')"; }
    echo "SLURM up: $(sinfo -h -N -o '%N %t %c CPUs %m MB')"
}

stop_pidfile() {
    local f=$1 name=$2 pid i
    if pid=$(pid_alive "$f"); then
        kill "$pid" 2>/dev/null || true
        for i in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill -9 "$pid" 2>/dev/null || true
        fi
        echo "stopped $name (pid $pid)"
    fi
    rm -f "$f"
}

cmd_stop() {
    need_root
    if pid_alive "$STATE/slurmctld.pid" >/dev/null; then
        scancel --user="$(id -un)" 2>/dev/null || true
    fi
    stop_pidfile "$STATE/slurmd.pid" slurmd
    stop_pidfile "$STATE/slurmctld.pid" slurmctld
    stop_pidfile "$STATE/munged.pid" munged
    if [ -e "$CONF" ] && grep -qF "$MARKER" "$CONF"; then
        rm -f "$CONF"
    fi
    case "$STATE" in
        /var/tmp/*|/tmp/*) rm -rf "$STATE" ;;
    esac
}

cmd_status() {
    local f
    for f in slurmctld slurmd munged; do
        if pid=$(pid_alive "$STATE/$f.pid"); then echo "$f running (pid $pid)"; else echo "$f not started by this script"; fi
    done
    sinfo 2>/dev/null || true
}

case "${1:-}" in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
