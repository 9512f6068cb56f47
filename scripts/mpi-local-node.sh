#!/bin/sh
# Open MPI's remote-shell agent for several "nodes" on this one machine:
# instead of `ssh HOST COMMAND`, runs COMMAND here in a UTS namespace whose
# host name is HOST. Open MPI 4.1 then starts one daemon (orted) per node of
# --host/--hostfile, as over ssh, and treats the ranks under different
# daemons as on different nodes: no shared memory between them (the vader
# BTL refuses them), so their messages take the network path (the TCP BTL
# over the loopback interface), and MPI_Get_processor_name names HOST.
# Needs no sshd and no name resolution: HOST is only a name.
#
#   export OMPI_MCA_plm_rsh_agent=$PWD/scripts/mpi-local-node.sh
#   zb-run out/dp --ranks 4 --hosts nodeA:2,nodeB:2 ...
#   (or: mpirun --mca plm_rsh_agent scripts/mpi-local-node.sh \
#          --host nodeA:2,nodeB:2 -np 4 zb-run out/dp ...)
#
#   scripts/mpi-local-node.sh --check   exit 0 when this machine allows it
#
# A UTS namespace needs root (unshare --uts) or unprivileged user
# namespaces (unshare --user --map-root-user --uts); without either the
# agent fails with a message, and --check exits 1 (the lit feature
# "mpi-local-nodes", test/lit.cfg.py).
set -u

namespace() {
  if unshare --uts true 2>/dev/null; then
    echo "--uts"
  elif unshare --user --map-root-user --uts true 2>/dev/null; then
    echo "--user --map-root-user --uts"
  else
    return 1
  fi
}

if [ "${1:-}" = "--check" ]; then
  command -v unshare >/dev/null 2>&1 && namespace >/dev/null
  exit
fi

# ssh's options (Open MPI passes none by default; skip any it is given).
while [ $# -gt 0 ]; do
  case "$1" in
  -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
  -*) shift ;;
  *) break ;;
  esac
done
if [ $# -lt 2 ]; then
  echo "mpi-local-node.sh: usage: mpi-local-node.sh HOST COMMAND..." >&2
  exit 2
fi
host=$1
shift
if ! ns=$(namespace); then
  echo "mpi-local-node.sh: cannot start node $host: unshare --uts needs" \
    "root or unprivileged user namespaces, neither is allowed here" >&2
  exit 1
fi
# As ssh does: the remote shell runs the words of COMMAND joined by spaces.
# shellcheck disable=SC2086 # $ns is a list of options
exec unshare $ns /bin/sh -c 'hostname "$1" && shift && exec /bin/sh -c "$*"' \
  mpi-local-node "$host" "$@"
