#!/bin/sh
# A Slurm Epilog (slurm.conf: Epilog=/usr/local/sbin/fabricscope-epilog): fabricscope doctor on
# each node after a job, its findings recorded in the results store named by FABRICSCOPE_DB
# (--db, docs/fleet.md), so a node's history is kept job by job. It drains nothing: the
# HealthCheckProgram does. Exits 0 whatever doctor found (an epilog that fails drains the
# node in Slurm's own name).
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
fabricscope=${FABRICSCOPE:-/usr/local/bin/fabricscope}
# slurmd's environment is small: the store's URL comes from here when it is not in it.
# shellcheck disable=SC1091
[ -r /etc/default/fabricscope ] && . /etc/default/fabricscope
[ -n "${FABRICSCOPE_DB:-}" ] || exit 0
export FABRICSCOPE_DB
"$fabricscope" doctor --launcher single --db "$FABRICSCOPE_DB" \
  >/var/log/fabricscope-epilog.log 2>&1
exit 0
