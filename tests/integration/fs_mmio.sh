#!/bin/sh
# --transport mmio: the shares reach the guest as virtio-mmio platform
# devices (and no virtio PCI device), file operations work, and DAX maps
# file data through the virtio-mmio shared memory region. --transport pci
# is still what it was.
. "$(dirname "$0")/lib.sh"
ext4_dir 256M
share=$EXT4_DIR
head -c 8M /dev/urandom >"$share/big"
sum=$(md5sum <"$share/big" | cut -d' ' -f1)
# Each virtio device: its id, the driver of the transport it sits on, its
# own driver; then how many virtio PCI functions (vendor 0x1af4) there are.
list_devices='
for d in /sys/bus/virtio/devices/*; do
	parent=$(dirname "$(readlink -f "$d")")
	echo "virtio $(cat "$d/modalias") on $(basename "$(readlink "$parent/driver")") driver $(basename "$(readlink "$d/driver")")"
done
echo "virtio pci devices $(cat /sys/bus/pci/devices/*/vendor 2>/dev/null | grep -c 0x1af4)"'

run_fsvm run -v --timeout 300 --transport mmio --share "$share:/mnt/d" -- sh -c "$list_devices"'
grep " /mnt/d " /proc/mounts | sed "s/^/mount /"
cd /mnt/d || exit 1
echo "sum $(md5sum <big | cut -d" " -f1)"
printf hello >new.txt && echo "read $(cat new.txt)"
mkdir dir && mv new.txt dir/moved.txt && echo "renamed $(cat dir/moved.txt)"
printf gone >gone.txt && rm gone.txt && [ ! -e gone.txt ] && echo unlinked
head -c 1M /dev/urandom >rand && sync && echo "rand $(md5sum <rand | cut -d" " -f1)"
'
expect_eq "status" 0 "$rc"
# The root share and /mnt/d: virtio-fs (id 26) from vendor "FSVM".
expect_eq "virtio-mmio virtio-fs devices" 2 \
	"$(echo "$out" | grep -c '^virtio virtio:d0000001Av4D565346 on virtio-mmio driver virtiofs$')"
expect_eq "other virtio devices" 0 "$(echo "$out" | grep '^virtio virtio:' | grep -vc ' on virtio-mmio ')"
expect_match "no virtio PCI device" "^virtio pci devices 0$" "$out"
expect_match "mounted with DAX" "^mount .* virtiofs .*dax=inode" "$out"
expect_match "8 MiB checksum" "^sum $sum$" "$out"
expect_match "read back" "^read hello$" "$out"
expect_match "renamed" "^renamed hello$" "$out"
expect_match "unlinked" "^unlinked$" "$out"

# The host sees what the guest did.
expect_eq "host: renamed" hello "$(cat "$share/dir/moved.txt" 2>&1)"
[ -e "$share/new.txt" ] && fail "host: rename left the old name"
[ -e "$share/gone.txt" ] && fail "host: unlink left the file"
expect_match "host: written data" "^rand $(md5sum <"$share/rand" | cut -d' ' -f1)$" "$out"

# The 8 MiB file's data went through the DAX window. The files the guest
# wrote were new, so not mapped (under FUSE_DAX_MIN_FILE_SIZE when looked
# up): reading rand back takes about 8 READs of 128 KiB (its cached pages
# go when its new mtime arrives), where the 8 MiB file would take 64 more.
reqs=$(echo "$err" | grep 'share0 requests:')
expect_match "data came through mappings" "SETUPMAPPING [1-9]" "$reqs"
reads=$(echo "$reqs" | sed -n 's/.* READ \([0-9]*\) .*/\1/p')
[ "${reads:-99}" -lt 16 ] || fail "the 8 MiB file came through READ too: $reqs"

run_fsvm run --timeout 300 --transport pci --share "$share:/mnt/d" -- sh -c "$list_devices"'
echo "sum $(md5sum </mnt/d/big | cut -d" " -f1)"'
expect_eq "pci: status" 0 "$rc"
expect_eq "pci: virtio-pci virtio-fs devices" 2 \
	"$(echo "$out" | grep -c '^virtio virtio:d0000001Av00001AF4 on virtio-pci driver virtiofs$')"
expect_match "pci: virtio PCI functions" "^virtio pci devices 2$" "$out"
expect_match "pci: 8 MiB checksum" "^sum $sum$" "$out"
finish
