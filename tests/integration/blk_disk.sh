#!/bin/sh
# --disk: an ext4 image made on the host is the guest's /dev/vda, mounted,
# written and read back, fsck-clean on the host afterwards; discard frees
# the image's blocks; a read-only disk refuses writes; a second VM on an
# image in use is refused; missing and unusable images are one line.
. "$(dirname "$0")/lib.sh"

img=$TMP/disk.img
truncate -s 256M "$img" && mkfs.ext4 -q -F -E nodiscard "$img" || fail "mkfs.ext4"
give_to_test_user "$img"

# Written in the guest: a small file, 32 MiB of random data (its sum
# compared on the host), then removed but for 1 MiB, and trimmed.
run_fsvm run --timeout 600 --disk "$img,serial=scratch-1" -- sh -c '
	set -e
	cat /sys/block/vda/serial; echo
	mount /dev/vda /mnt
	echo hello >/mnt/small
	dd if=/dev/urandom of=/mnt/big bs=1M count=32 status=none
	sha256sum /mnt/big | cut -d" " -f1 >/mnt/big.sum
	head -c 1048576 /mnt/big >/mnt/kept
	sync
	umount /mnt'
expect_status "write: status" 0 "$rc"
expect_eq "serial" "scratch-1" "$(echo "$out" | head -n 1)"
e2fsck -fn "$img" >"$TMP/fsck" 2>&1 || { fail "fsck after the guest wrote"; cat "$TMP/fsck" >&2; }
expect_eq "host reads the guest's file" hello "$(debugfs -R 'cat /small' "$img" 2>/dev/null)"
debugfs -R "dump /big $TMP/big" "$img" 2>/dev/null
expect_eq "host: 32 MiB intact" "$(debugfs -R 'cat /big.sum' "$img" 2>/dev/null)" \
	"$(sha256sum "$TMP/big" | cut -d' ' -f1)"

# Discard: the image's blocks go back to the host's file system.
before=$(du -k "$img" | cut -f1)
run_fsvm run --timeout 600 --disk "$img" -- sh -c '
	set -e
	mount /dev/vda /mnt
	rm /mnt/big
	sync # blocks are free once the journal has committed their release
	fstrim /mnt
	umount /mnt'
expect_status "trim: status" 0 "$rc"
after=$(du -k "$img" | cut -f1)
[ "$after" -lt $((before - 16384)) ] || fail "discard: the image still takes $after KiB (was $before)"
e2fsck -fn "$img" >"$TMP/fsck" 2>&1 || { fail "fsck after the trim"; cat "$TMP/fsck" >&2; }

# Read-only: the guest sees it so, the kernel refuses writes, and the
# image is unchanged.
sum=$(sha256sum "$img" | cut -d' ' -f1)
run_fsvm run --timeout 600 --disk "$img:ro" -- sh -c '
	cat /sys/block/vda/ro
	dd if=/dev/zero of=/dev/vda bs=4096 count=1 oflag=direct status=none 2>/dev/null && echo wrote
	mount -o ro /dev/vda /mnt && cat /mnt/small && umount /mnt'
expect_status "read-only: status" 0 "$rc"
expect_eq "read-only: guest" "1
hello" "$out"
expect_eq "read-only: image unchanged" "$sum" "$(sha256sum "$img" | cut -d' ' -f1)"

# Two disks, over virtio-mmio: vda and vdb in --disk order.
truncate -s 16M "$TMP/second.img"
give_to_test_user "$TMP/second.img"
run_fsvm run --timeout 600 --transport mmio --disk "$img:ro" --disk "$TMP/second.img" -- sh -c '
	echo second | dd of=/dev/vdb conv=fsync status=none
	cat /sys/block/vda/size /sys/block/vdb/size'
expect_status "two disks: status" 0 "$rc"
expect_eq "two disks: sizes in sectors" "524288
32768" "$out"
expect_eq "two disks: vdb written" second "$(head -n 1 "$TMP/second.img")"

# One image, two VMs: the second is refused while the first runs.
mkdir -p "$TMP/mark" && give_to_test_user "$TMP/mark"
"$FSVM" run --timeout 600 --disk "$img" --share "$TMP/mark:/mark" -- \
	sh -c 'touch /mark/up; sleep 300' >/dev/null 2>"$TMP/first.err" &
first=$!
wait_for_file "$TMP/mark/up" "$first"
[ -e "$TMP/mark/up" ] || fail "the first VM did not start: $(tail -n 3 "$TMP/first.err")"
expect_error "image in use" "^fsvm: --disk $img: in use by another VM" run --disk "$img" -- true
expect_error "image in use, even read-only" "in use by another VM" run --disk "$img:ro" -- true
kill "$first"
wait "$first"

expect_error "missing image" "^fsvm: --disk $TMP/none.img: cannot open it: No such file or directory" \
	run --disk "$TMP/none.img" -- true
expect_error "a folder" "^fsvm: --disk $TMP/mark: cannot open it: Is a directory" run --disk "$TMP/mark" -- true
expect_error "a character device" "not a regular file or a block device" run --disk /dev/null -- true
: >"$TMP/empty.img" && give_to_test_user "$TMP/empty.img"
expect_error "empty image" "smaller than one 512-byte sector" run --disk "$TMP/empty.img" -- true
chmod 444 "$TMP/second.img"
expect_error "unwritable image" "cannot open it for writing \(add :ro" run --disk "$TMP/second.img" -- true
finish
