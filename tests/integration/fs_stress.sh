#!/bin/sh
# fio with data verification and stress-ng's file-system stressors over a
# share, sized for the lab: every byte read back must match, zero errors.
. "$(dirname "$0")/lib.sh"
ext4_dir 512M
share=$EXT4_DIR
mkdir -p "$share"

run_fsvm run --timeout 500 --share "$share:/mnt/share" -- sh -c '
	cd /mnt/share || exit 1
	fio --name=verify --directory=/mnt/share --size=8M --bs=4k --rw=randwrite \
		--ioengine=psync --verify=crc32c --verify_fatal=1 --do_verify=1 \
		--output-format=terse --minimal >fio.out 2>&1
	echo "fio: $?"
	fio --name=seq --directory=/mnt/share --size=8M --bs=64k --rw=write \
		--ioengine=psync --verify=crc32c --verify_fatal=1 --direct=1 \
		--output-format=terse --minimal >>fio.out 2>&1
	echo "fio-direct: $?"
	stress-ng --temp-path /mnt/share --timeout 60 \
		--dentry 1 --dentry-ops 100 --dir 1 --dir-ops 50 \
		--filename 1 --filename-ops 50 --rename 1 --rename-ops 100 \
		--hdd 1 --hdd-ops 100 --hdd-bytes 1M --link 1 --link-ops 50 \
		--symlink 1 --symlink-ops 50 --lockf 1 --lockf-ops 100 \
		--flock 1 --flock-ops 100 --fallocate 1 --fallocate-ops 10 --fallocate-bytes 16M \
		--xattr 1 --xattr-ops 50 >stress.out 2>&1
	echo "stress-ng: $?"
	df -h /mnt/share; df -i /mnt/share'
expect_eq "status" 0 "$rc"
[ "$rc" = 0 ] || { echo "$out"; echo "$err" | tail -n 30; } >&2
grep -q '^stress-ng: 0$' "$TMP/out" || echo "$out" | tail -n 4 >&2
expect_match "fio verify" "^fio: 0$" "$out"
expect_match "fio direct verify" "^fio-direct: 0$" "$out"
expect_match "stress-ng" "^stress-ng: 0$" "$out"
if grep -Eiq 'verify.*(bad|fail)|fail' "$share/fio.out" "$share/stress.out"; then
	fail "errors reported:"
	grep -Ei 'fail|bad' "$share/fio.out" "$share/stress.out" | head -n 10 >&2
fi
finish
