#!/bin/sh
# scripts/erode-tiles.sbatch on a real single-node Slurm cluster started
# here (munged, slurmctld and slurmd in the foreground, in a scratch
# directory, on ports of their own): the job array erodes the tiles, a
# dependent array stitches them, and the result equals the GNU parallel
# pipeline's byte for byte.  Skips, saying so, without Debian's slurmctld,
# slurmd, slurm-client and munge packages (scripts/deps --slurm) or root.
. "$(dirname "$0")/lib.sh"

t_case "Slurm job array: erode-tiles.sbatch erodes and stitches a tile set"
for c in munged mungekey slurmctld slurmd sbatch squeue sinfo; do
    if ! have "$c" && [ ! -x "/usr/sbin/$c" ]; then
        t_skip "no $c (Debian slurmctld slurmd slurm-client munge: scripts/deps --slurm)"; exit 0
    fi
done
[ "$(id -u)" -eq 0 ] || { t_skip "starting slurmd needs root"; exit 0; }
have gdal_translate || { t_skip "needs gdal-bin"; exit 0; }
have parallel || { t_skip "needs GNU parallel"; exit 0; }
PATH=$PATH:/usr/sbin

D=$T/slurm
mkdir -p "$D/state" "$D/spool" "$D/out" "$D/par"
pids=""
stop() {
    for p in $pids; do kill "$p" 2> /dev/null; done
    for p in $pids; do wait "$p" 2> /dev/null; done
    t_exit_trap
}
trap stop EXIT

# Ports of our own, away from a real cluster's 6817/6818.
base=$((20000 + $$ % 20000 * 2))
host=$(hostname -s)
mungekey -c -k "$D/munge.key" > /dev/null 2>&1
munged -F --force -S "$D/munge.sock" --key-file "$D/munge.key" --pid-file "$D/munged.pid" \
    --log-file "$D/munged.log" --seed-file "$D/munged.seed" > /dev/null 2>&1 &
pids="$pids $!"
cat > "$D/slurm.conf" << EOF
ClusterName=erodetest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$D/munge.sock
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldPort=$base
SlurmdPort=$((base + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=erodetest Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$D/slurm.conf"
for i in $(seq 1 40); do [ -S "$D/munge.sock" ] && break; sleep 0.25; done
slurmctld -D -i > "$D/ctl.out" 2>&1 &
pids="$pids $!"
slurmd -D > "$D/d.out" 2>&1 &
pids="$pids $!"
for i in $(seq 1 80); do sinfo -h -o %t 2> /dev/null | grep -q idle && break; sleep 0.25; done
if ! sinfo -h -o %t 2> /dev/null | grep -q idle; then
    t_skip "the single-node cluster did not come up: $(tail -n 1 "$D/slurmctld.log" "$D/slurmd.log" 2> /dev/null | tr '\n' ' ' | head -c 200)"
    exit 0
fi

dem=$T/puget.tif
gdal_translate -q -ot Float32 -scale 0 10000 0 1000 -srcwin 256 256 256 256 -a_srs EPSG:32610 \
    -a_ullr 500000 5400000 540960 5359040 "$DATA/puget_sound_1k_u16.png" "$dem"
"$SRCDIR/scripts/cut-tiles" "$dem" 2 "$T/tiles" > "$T/tiles.list"
recipe="-s mei.steps=50 --layers height,water"
sb=$SRCDIR/scripts/erode-tiles.sbatch
# shellcheck disable=SC2086
job=$(sbatch --parsable --array=1-4 --cpus-per-task=1 -o "$D/erode-%a.log" \
    --export=ALL,ERODE="$ERODE" "$sb" "$T/tiles.list" "$D/out" 16 -- $recipe) ||
    t_fail "sbatch refused the erode array"
# shellcheck disable=SC2086
sbatch --parsable --array=1-4 --cpus-per-task=1 -o "$D/stitch-%a.log" --dependency=afterok:"$job" \
    --export=ALL,ERODE="$ERODE",ERODE_STITCH=1 "$sb" "$T/tiles.list" "$D/out" 16 -- $recipe > /dev/null ||
    t_fail "sbatch refused the stitch array"
for i in $(seq 1 240); do [ -z "$(squeue -h 2> /dev/null)" ] && break; sleep 0.25; done
[ -z "$(squeue -h 2> /dev/null)" ] || t_fail "jobs still queued after 60 s: $(squeue -h | head -n 3)"
# shellcheck disable=SC2086
"$SRCDIR/scripts/erode-tiles" --erode "$ERODE" --halo 16 --keep-halo -o "$D/par" "$T/tiles.list" -- $recipe ||
    t_fail "the GNU parallel pipeline failed"
while read -r t; do
    b=$(basename "$t" .tif)
    for l in height water; do
        [ -f "$D/out/$b.$l.tif" ] || { t_fail "no $b.$l.tif: $(cat "$D"/*.log 2> /dev/null | head -c 300)"; continue; }
        cmp -s "$D/out/$b.$l.tif" "$D/par/$b.$l.tif" || t_fail "$b.$l.tif: Slurm and GNU parallel differ"
    done
done < "$T/tiles.list"
t_ok
