#!/bin/sh
# Stage 2 of the Soft-RoCE guest, running on the host's root filesystem
# (read-only). Gives the guest a writable /run and /dev/shm (not /tmp: a
# tmpfs there would hide the host's files under /tmp, where a checkout may
# live), a dummy netdev in 198.18.0.0/15 with a Soft-RoCE device rxe0 on it,
# then runs cmd.sh from the results share and records its exit status.
mount -t tmpfs tmpfs /run
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
mkdir -p /run/tmp /run/results
mount -t 9p -o trans=virtio,version=9p2000.L results /run/results
export TMPDIR=/run/tmp HOME=/run/tmp PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ip link set lo up
modprobe rdma_rxe && modprobe ib_uverbs
ip link add dummy0 type dummy
ip addr add 198.18.1.1/24 dev dummy0
ip link set dummy0 up
rdma link add rxe0 type rxe netdev dummy0
ulimit -l unlimited
cd /run/results
sh ./cmd.sh > ./log 2>&1
echo $? > ./exit_code
sync
echo o > /proc/sysrq-trigger
