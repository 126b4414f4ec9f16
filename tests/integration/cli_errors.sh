#!/bin/sh
# Bad kernels, initrds and roots: one clear line on stderr and exit 125, never
# a crash. fsvm reads them once it has a KVM that boots stock kernels, so this
# needs one though it boots nothing (tests/cli/usage.sh: what fails before).
. "$(dirname "$0")/lib.sh"

expect_error "missing kernel" "/nonexistent/bzImage: cannot open the kernel" run --kernel /nonexistent/bzImage -- true

head -c 3000000 /dev/urandom >"$TMP/garbage"
expect_error "garbage kernel" "not a bzImage" run --kernel "$TMP/garbage" -- true
kernel=$(cd "$(dirname "$0")/../.." && pwd)/build/guest/6.1/kernel/vmlinuz
head -c 1000000 "$kernel" >"$TMP/truncated"
expect_error "truncated kernel" "truncated kernel image" run --kernel "$TMP/truncated" -- true
head -c 200000000 /dev/zero >"$TMP/huge-initrd"
expect_error "initrd too large" "initrd too large for guest RAM" run --mem 128M --initrd "$TMP/huge-initrd" -- true
expect_error "missing root" "--root: /nonexistent" run --root /nonexistent -- true
finish
