#!/bin/sh
# A Slurm Prolog (slurm.conf: Prolog=/usr/local/sbin/fabricscope-prolog, PrologFlags=Alloc):
# a short `fabricscope locate` across the job's nodes before the job starts, one process per
# node started by each node's prolog and meeting over the env launcher; the first node reports
# and drains the node (or NIC) a culprit names ("fabricscope locate: node: ..."). Links,
# switches and rails are named in the log, never drained. docs/slurm.md.
#
# NOT run on the test bed: the bed tests doctor --drain and --resume (tests/launch/
# slurm_testbed.sh drain). Read it before deploying it: every node of the job runs it at once,
# and a prolog that exits non-zero makes Slurm drain the node itself, so this one exits 0.
# Variables: FABRICSCOPE (the binary), FABRICSCOPE_PROLOG_PORT (default 29511),
# FABRICSCOPE_LOCATE_FLAGS (default: quick mode, 4 MB, a 20 s budget).
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
fabricscope=${FABRICSCOPE:-/usr/local/bin/fabricscope}
hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST") || exit 0
count=$(echo "$hosts" | wc -l)
[ "$count" -ge 2 ] || exit 0  # one node: nothing to compare it with
rank=$(echo "$hosts" | grep -nx "$SLURMD_NODENAME" | cut -d: -f1)
[ -n "$rank" ] || exit 0
log=/var/log/fabricscope-prolog-$SLURM_JOB_ID.log
# shellcheck disable=SC2086  # the flags are words
RANK=$((rank - 1)) WORLD_SIZE=$count MASTER_ADDR=$(echo "$hosts" | head -n 1) \
  MASTER_PORT=${FABRICSCOPE_PROLOG_PORT:-29511} \
  timeout 120 "$fabricscope" locate --launcher env \
  ${FABRICSCOPE_LOCATE_FLAGS:---mode quick -b 4M -n 3 --budget 20} --drain >"$log" 2>&1
exit 0
