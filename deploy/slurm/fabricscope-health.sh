#!/bin/sh
# Slurm's HealthCheckProgram (slurm.conf: HealthCheckProgram=/usr/local/sbin/fabricscope-health,
# HealthCheckInterval=300, HealthCheckNodeState=ANY): fabricscope doctor on this node. A
# CRITICAL finding of this node's own checks (a port down, an NCCL variable that breaks NCCL)
# drains it with the reason "fabricscope doctor: CHECK: ..."; a node doctor drained earlier
# and that passes now is resumed. A drain by anyone else is never touched. docs/slurm.md.
#
# Install: cp deploy/slurm/fabricscope-health.sh /usr/local/sbin/fabricscope-health
# Variables: FABRICSCOPE (the binary), FABRICSCOPE_DOCTOR_FLAGS (e.g. "--check ib_ports,mtu"),
# FABRICSCOPE_HEALTH_LOG (the last report, default /var/log/fabricscope-health.log).
# slurmd runs it as root with a bare environment: PATH must reach scontrol.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
fabricscope=${FABRICSCOPE:-/usr/local/bin/fabricscope}
log=${FABRICSCOPE_HEALTH_LOG:-/var/log/fabricscope-health.log}
# shellcheck disable=SC2086  # the flags are words
"$fabricscope" doctor --launcher single --drain --resume ${FABRICSCOPE_DOCTOR_FLAGS:-} \
  >"$log.tmp" 2>&1
rc=$?
mv -f "$log.tmp" "$log"
# doctor's own exit (1: a CRITICAL finding) is in the log; the drain is how Slurm learns of
# it. 3: scontrol failed (the log says how), or doctor could not run.
[ "$rc" -eq 3 ] && logger -t fabricscope-health "doctor or scontrol failed: see $log"
exit 0
