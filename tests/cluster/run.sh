#!/usr/bin/env bash
# Builds the namespace test cluster, runs the cluster tests through it, and
# tears it down whatever happens. Needs root (network namespaces, sshd).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$(mktemp -d /tmp/oneside-cluster.XXXXXX)
trap 'tests/cluster/cluster.sh down "$dir"; rm -rf "$dir"' EXIT
tests/cluster/cluster.sh up 4 "$dir"
cargo build --workspace --bins --examples --quiet
# The namespace hosts share this machine's cores (cluster.sh sets the same
# on each host's sshd): waits must not poll as if each rank had a core.
export ONESIDE_YIELD_WHEN_IDLE=1
ONESIDE_CLUSTER_DIR="$dir" cargo test -p rlaunch --features harness-tests --test cluster -- --test-threads=1
