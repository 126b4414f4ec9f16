#!/bin/sh
# A check of the KVM the guest suite runs on (the lab's), not of fsvm (tests/integration/run-all
# runs it first): boots the 6.1 guest kernel (the lab's own) under QEMU with KVM into a busybox
# initramfs, which proves that KVM runs stock kernels.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
kernel=$root/build/guest/6.1/kernel/vmlinuz
machine=${FSVM_NESTED_MACHINE:-microvm,rtc=on} # microvm without an RTC: Linux spends 3.6 s probing CMOS
marker=nested-guest-userspace-ok
fail() { echo "FAIL: $*"; exit 1; }

kvm=$("$root/tools/kvm-check") || fail "$kvm (needs a KVM that runs stock kernels: run tests/integration/run-all)"
[ -f "$kernel" ] || fail "no $kernel (run make guest)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/root/bin" "$tmp/root/proc"
cp /bin/busybox "$tmp/root/bin/busybox"
cat >"$tmp/root/init" <<INIT
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox echo "$marker uptime \$(/bin/busybox cut -d' ' -f1 /proc/uptime)s"
/bin/busybox poweroff -f
INIT
chmod 755 "$tmp/root/init"
(cd "$tmp/root" && find . | cpio -o -H newc --quiet) >"$tmp/initrd"

start=$(date +%s%N)
timeout -k 5 120 qemu-system-x86_64 -enable-kvm -cpu host -M "$machine" -m 256M -smp 1 \
	-nodefaults -no-user-config -nographic -serial stdio -no-reboot \
	-kernel "$kernel" -initrd "$tmp/initrd" -append 'console=ttyS0 quiet panic=-1' \
	</dev/null >"$tmp/out" 2>&1
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
line=$(grep -o -m 1 "$marker uptime [0-9.]*s" "$tmp/out")
if [ -z "$line" ]; then
	tail -n 20 "$tmp/out"
	[ $rc -eq 124 ] && fail "no '$marker' from the nested guest within 120 s"
	fail "no '$marker' from the nested guest (qemu exit $rc)"
fi
[ $rc -eq 0 ] || fail "nested QEMU exited $rc after the guest reached user space"
echo "nested guest ($kvm, -M $machine): user space at ${line#"$marker" uptime } guest uptime;" \
	"launch to power-off $((ms / 1000)).$((ms % 1000 / 100))s wall"
