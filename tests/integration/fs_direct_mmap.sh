#!/bin/sh
# --cache none (without DAX) opens files for direct I/O. A 6.12 guest, given
# FUSE_DIRECT_IO_ALLOW_MMAP, maps them shared and its stores reach the host
# file; 6.1, which predates the flag, refuses the mapping (ENODEV).
. "$(dirname "$0")/lib.sh"
mkdir -p "$TMP/d"
printf 'xxxxxxxx' >"$TMP/d/m"
give_to_test_user "$TMP/d"

map='import mmap, os
f = open("/mnt/d/m", "r+b")
try:
    m = mmap.mmap(f.fileno(), 8)
except OSError as e:
    print(os.strerror(e.errno)); raise SystemExit(3)
m[0:5] = b"hello"; m.flush(); m.close(); f.close()
print(open("/mnt/d/m").read())'

run_fsvm run --guest-kernel 6.12 --cache none --dax 0 --timeout 200 \
	--share "$TMP/d:/mnt/d" -- python3 -c "$map"
expect_eq "6.12: status" 0 "$rc"
expect_eq "6.12: the guest reads its stores" "helloxxx" "$out"
expect_eq "6.12: the host file" "helloxxx" "$(cat "$TMP/d/m")"

printf 'xxxxxxxx' >"$TMP/d/m"
run_fsvm run --guest-kernel 6.1 --cache none --dax 0 --timeout 200 \
	--share "$TMP/d:/mnt/d" -- python3 -c "$map"
expect_eq "6.1: status" 3 "$rc"
expect_eq "6.1: shared mmap of a direct I/O file refused" "No such device" "$out"
expect_eq "6.1: the host file unchanged" "xxxxxxxx" "$(cat "$TMP/d/m")"
finish
