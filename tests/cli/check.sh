#!/bin/sh
# `fsvm run --check`: what needs no KVM checked, each problem one line (all
# of them), exit 0 or 125, on this host whatever its /dev/kvm is, and with
# none at all; and a run without /dev/kvm names those problems, not only the
# missing KVM. Needs no KVM, no guest and no root: fsvm runs as whoever runs
# the test.
FSVM=$(cd "$(dirname "$0")/../.." && pwd)/fsvm
. "$(dirname "$0")/../integration/lib.sh"

# A kernel of a known format (make test builds it) and an initramfs.
kernel=$TOP/build/guest/6.1/kernel/vmlinuz
[ -f "$kernel" ] || fail "no $kernel (make test makes it)"
echo hello | gzip >"$TMP/initrd"
mkdir "$TMP/share"
good="--kernel $kernel --initrd $TMP/initrd --share $TMP/share"

# summary FILE: "status|ended_by|reason|message|each problem's reason".
summary() {
	python3 -c 'import json, sys
e = json.load(open(sys.argv[1]))["exit"]
print(e["status"], e["ended_by"], e["reason"], e["message"],
      ",".join(p["reason"] for p in e["problems"]), sep="|")' "$1" 2>&1
}

run_fsvm run --check $good -- true
expect_eq "good: status" 0 "$rc"
expect_eq "good: says nothing" "" "$err$out"
run_fsvm run --check --json-file "$TMP/good.json" $good -- true
expect_eq "good: summary" "0|check|None|None|" "$(summary "$TMP/good.json")"

# A missing share, a missing kernel, a bad id map: each named, one line
# each, in one run.
run_fsvm run --check --json-file "$TMP/bad.json" --kernel "$TMP/no-kernel" --initrd "$TMP/initrd" \
	--share "$TMP/no-share" --uid-map 1:1000 -- true
expect_eq "problems: status" 125 "$rc"
expect_eq "problems: one line each" 3 "$(printf '%s\n' "$err" | wc -l)"
expect_match "problems: the id map" "^fsvm: identity: --uid-map/--gid-map: guest root \(0\) must be mapped$" "$err"
expect_match "problems: the kernel" "^fsvm: $TMP/no-kernel: cannot open the kernel \(No such file or directory\)$" "$err"
expect_match "problems: the share" "^fsvm: --share: $TMP/no-share \(No such file or directory\)$" "$err"
expect_eq "problems: summary" \
	"125|check|bad_ids|identity: --uid-map/--gid-map: guest root (0) must be mapped|bad_ids,bad_kernel,bad_share" \
	"$(summary "$TMP/bad.json")"

head -c 5000 /dev/urandom >"$TMP/junk"
run_fsvm run --check --kernel "$TMP/junk" --initrd "$TMP/junk" --root "$TMP/initrd" -- true
expect_eq "formats: status" 125 "$rc"
expect_match "formats: the kernel" "^fsvm: $TMP/junk: not a bzImage" "$err"
expect_match "formats: the initramfs" "^fsvm: $TMP/junk: not an initramfs" "$err"
expect_match "formats: the root" "^fsvm: --root: $TMP/initrd: not a directory$" "$err"

run_fsvm run --check --kernel "$kernel" --guest-kernel "$TMP/no-guest" -- true
expect_eq "no guest folder: status" 125 "$rc"
expect_eq "no guest folder: one line" 1 "$(printf '%s\n' "$err" | wc -l)"
expect_match "no guest folder: named" "^fsvm: guest: $TMP/no-guest: no such folder" "$err"

# A bad flag is a problem --check reports too.
run_fsvm run --check --cpus 0 -- true
expect_eq "bad flag: status" 125 "$rc"
expect_match "bad flag: message" "^fsvm: --cpus: '0' is not a number from 1 to 64$" "$err"

# No /dev/kvm: an empty /dev in a mount namespace of its own (and, unless
# we are root, a user namespace to make it in). --check is the same; a run
# names the missing share, and a good one only then says there is no KVM.
if [ "$(id -u)" = 0 ]; then ns=-m; else ns=-rm; fi
no_kvm() {
	unshare $ns sh -c 'mount -t tmpfs none /dev && exec "$@"' sh "$FSVM" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	err=$(cat "$TMP/err")
}
no_kvm run --check $good -- true
expect_eq "no kvm: --check good: status" 0 "$rc"
expect_eq "no kvm: --check good: says nothing" "" "$err"
no_kvm run --check --kernel "$TMP/no-kernel" --initrd "$TMP/initrd" --share "$TMP/no-share" \
	--uid-map 1:1000 -- true
expect_eq "no kvm: --check problems: status" 125 "$rc"
expect_eq "no kvm: --check problems: one line each" 3 "$(printf '%s\n' "$err" | wc -l)"
expect_match "no kvm: --check problems: the share" "no-share \(No such file or directory\)" "$err"
no_kvm run --json-file "$TMP/nokvm-share.json" --kernel "$kernel" --initrd "$TMP/initrd" \
	--share "$TMP/no-share" -- true
expect_eq "no kvm: run with a missing share: status" 125 "$rc"
expect_eq "no kvm: run with a missing share: the line" "fsvm: --share: $TMP/no-share (No such file or directory)" "$err"
expect_eq "no kvm: run with a missing share: summary" \
	"125|fsvm|bad_share|--share: $TMP/no-share (No such file or directory)|bad_share" \
	"$(summary "$TMP/nokvm-share.json")"
no_kvm run --json-file "$TMP/nokvm.json" $good -- true
expect_eq "no kvm: good run: status" 125 "$rc"
expect_match "no kvm: good run: the line" "^fsvm: kvm: no /dev/kvm" "$err"
expect_match "no kvm: good run: summary" "^125\|fsvm\|no_kvm\|kvm: no /dev/kvm.*\|$" "$(summary "$TMP/nokvm.json")"
finish
