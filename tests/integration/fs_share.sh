#!/bin/sh
# A read-write --share backed by a real host file system: every file
# operation works in the guest and shows on the host.
. "$(dirname "$0")/lib.sh"
ext4_dir 256M
share=$EXT4_DIR
mkdir -p "$share/many"
# 10,000 entries made on the host, listed by the guest.
(cd "$share/many" && seq -f 'entry-%05g' 10000 | xargs touch)
ls "$share/many" | sort >"$share/expected-names"
guest_script=$(cd "$(dirname "$0")" && pwd)/guest/fs_ops.sh

give_to_test_user "$share"
# Started as root with id maps: guest root is the test user, and the guest's
# 1234 and 5678 (its chown check) are host ids 5234 and 6678.
run_fsvm_as_root run --timeout 400 --uid-map "0:$TEST_UID" --gid-map "0:$TEST_GID" \
	--uid-map 1234:5234 --gid-map 5678:6678 \
	--share "$share:/mnt/share" -- sh "$guest_script" /mnt/share
expect_eq "status" 0 "$rc"
echo "$out" | grep '^not ok' | while read -r line; do echo "FAIL: guest: $line" >&2; done
echo "$out" | grep -q '^not ok' && fail "guest checks failed"
expect_eq "guest checks" 27 "$(echo "$out" | grep -c '^ok ')"

# The host sees what the guest did.
expect_eq "host: created" "created" "$(cat "$share/new.txt")"
expect_eq "host: written" "012ABC6789" "$(cat "$share/data.bin")"
expect_eq "host: appended" "line1
line2" "$(cat "$share/app.txt")"
expect_eq "host: truncated" 4 "$(stat -c %s "$share/trunc.txt")"
[ -e "$share/before" ] && fail "host: rename left the old name"
expect_eq "host: renamed" r "$(cat "$share/after")"
expect_eq "host: exchanged" "B A" "$(cat "$share/xa") $(cat "$share/xb")"
expect_eq "host: hard link" "$(stat -c %i "$share/orig")" "$(stat -c %i "$share/hard")"
expect_eq "host: symlink" orig "$(readlink "$share/soft")"
expect_eq "host: mode" 640 "$(stat -c %a "$share/modes")"
expect_eq "host: owner, through the maps" 5234:6678 "$(stat -c %u:%g "$share/owned")"
expect_eq "host: files are guest root's host user's" "$TEST_UID:$TEST_GID" "$(stat -c %u:%g "$share/new.txt")"
expect_eq "host: mtime" 981173106 "$(stat -c %Y "$share/times")"
expect_eq "host: xattr" hello "$(getfattr --absolute-names --only-values -n user.fsvm "$share/xat" 2>&1)"
[ -d "$share/dir/sub" ] || fail "host: mkdir"
[ -e "$share/gone" ] && fail "host: rmdir"
expect_eq "host: fallocate" 1048576 "$(stat -c %s "$share/falloc")"
expect_eq "host: mmap write" MMAPW "$(dd if="$share/mapped" bs=1 skip=100 count=5 status=none)"
finish
