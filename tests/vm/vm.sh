#!/usr/bin/env bash
# Boots a Soft-RoCE guest under QEMU (TCG: KVM hangs on this kind of
# machine), runs a command in it, prints its output, and exits with its
# status. The guest sees the host's / read-only over 9p, so binaries built
# on the host run unchanged; results come back through a writable 9p share.
#
#   tests/vm/vm.sh 'ibv_devices && ib_write_lat -d rxe0 ...'
#   VM_TIMEOUT=1200 tests/vm/vm.sh "$(cat script)"
#
# VM_NET=listen:PORT:ADDR/LEN or connect:PORT:ADDR/LEN joins two guests with
# a QEMU socket netdev on host loopback and gives eth0 that address.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kernel_version=${VM_KERNEL:-$(ls /lib/modules | sort -V | tail -1)}
modules=/lib/modules/$kernel_version/kernel
timeout=${VM_TIMEOUT:-900}

work=$(mktemp -d /var/tmp/oneside-vm.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/initramfs/bin" "$work/initramfs/modules" "$work/initramfs/"{proc,sys,dev,newroot} "$work/results"
cp /bin/busybox "$work/initramfs/bin/busybox"
for tool in sh mount insmod switch_root mkdir cat echo; do ln -s busybox "$work/initramfs/bin/$tool"; done
order=(virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p)
for m in "${order[@]}"; do
  cp "$(find "$modules" -name "$m.ko" | head -1)" "$work/initramfs/modules/"
done
printf '%s\n' "${order[@]}" > "$work/initramfs/modules.order"
cp "$here/init" "$work/initramfs/init"
chmod +x "$work/initramfs/init"
(cd "$work/initramfs" && find . | cpio -o -H newc --quiet | gzip -1 > "$work/initramfs.gz")
printf '%s\n' "$1" > "$work/results/cmd.sh"

net_args=(-nic none)
guest_net=dummy
if [ -n "${VM_NET:-}" ]; then
  IFS=: read -r mode port address <<< "$VM_NET"
  mac=52:54:00:00:00:$([ "$mode" = listen ] && echo 02 || echo 01)
  net_args=(-nic none -netdev "socket,id=n0,$mode=127.0.0.1:$port" -device "virtio-net-pci,netdev=n0,mac=$mac,romfile=")
  guest_net="eth:$address"
  # QEMU connects without blocking and keeps a dead link when nothing
  # listens yet (on loopback connect() says EINPROGRESS, then the refusal
  # comes late), so the connecting guest waits until its peer's QEMU
  # listens: looked at with ss, since a probe connection would be the one
  # the listener accepts.
  if [ "$mode" = connect ]; then
    for _ in $(seq 240); do
      ss -Hltn "sport = :$port" | grep -q . && break
      sleep 0.5
    done
    ss -Hltn "sport = :$port" | grep -q . \
      || { echo "vm: nothing listens on 127.0.0.1:$port after 120 s: the listening guest did not start"; exit 1; }
  fi
fi

timeout --signal=KILL "$timeout" qemu-system-x86_64 \
  -accel tcg,thread=multi -cpu max -smp 2 -m 2048 -nographic -no-reboot "${net_args[@]}" \
  -kernel "/boot/vmlinuz-$kernel_version" -initrd "$work/initramfs.gz" \
  -append "console=ttyS0 quiet panic=-1 ONESIDE_GUEST=$here/guest.sh ONESIDE_NET=$guest_net" \
  -fsdev local,id=hostroot,path=/,readonly=on,multidevs=remap,security_model=none \
  -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
  -fsdev local,id=results,path="$work/results",security_model=none \
  -device virtio-9p-pci,fsdev=results,mount_tag=results \
  > "$work/console" 2>&1 || true

cat "$work/results/log" 2>/dev/null || { echo "vm: the guest produced no log; console:"; tail -40 "$work/console"; }
if [ ! -f "$work/results/exit_code" ]; then
  echo "vm: the guest did not finish (boot failure, or over ${timeout}s)"
  exit 1
fi
exit "$(cat "$work/results/exit_code")"
