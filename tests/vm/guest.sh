#!/bin/sh
# Stage 2 of the Soft-RoCE guest, running on the host's root filesystem
# (read-only). Gives the guest a writable /run and /dev/shm (not /tmp: a
# tmpfs there would hide the host's files under /tmp, where a checkout may
# live), a netdev in 198.18.0.0/15 with a Soft-RoCE device rxe0 on it (a
# dummy device, or with ONESIDE_NET=eth:ADDR/LEN the virtio eth0 that joins
# two guests), then runs cmd.sh from the results share and records its status.
mount -t tmpfs tmpfs /run
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
mkdir -p /run/tmp /run/results
mount -t 9p -o trans=virtio,version=9p2000.L results /run/results
export TMPDIR=/run/tmp HOME=/run/tmp PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ip link set lo up
modprobe rdma_rxe && modprobe ib_uverbs
case "${ONESIDE_NET:-dummy}" in
  eth:*)
    modprobe virtio_net
    dev=eth0
    ip addr add "${ONESIDE_NET#eth:}" dev "$dev"
    ;;
  *)
    dev=dummy0
    ip link add "$dev" type dummy
    ip addr add 198.18.1.1/24 dev "$dev"
    ;;
esac
ip link set "$dev" up
rdma link add rxe0 type rxe netdev "$dev"
ulimit -l unlimited
cd /run/results
sh ./cmd.sh > ./log 2>&1
echo $? > ./exit_code
sync
echo o > /proc/sysrq-trigger
