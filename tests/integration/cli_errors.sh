#!/bin/sh
# Bad user input: one clear line on stderr and exit 125, never a crash.
. "$(dirname "$0")/lib.sh"

# expect_error WHAT REGEX ARGS...
expect_error() {
	what=$1 regex=$2
	shift 2
	run_fsvm "$@"
	expect_eq "$what: status" 125 "$rc"
	expect_eq "$what: one line" 1 "$(printf '%s\n' "$err" | wc -l)"
	expect_match "$what: message" "$regex" "$err"
}

expect_error "no command" "no command given" 
expect_error "unknown flag" "unknown option '--bogus'" run --bogus
expect_error "missing value" "option '--cpus' needs a value" run --cpus
expect_error "bad cpus" "--cpus: 'x'" run --cpus x -- true
expect_error "too many cpus" "--cpus: '65'" run --cpus 65 -- true
expect_error "bad mem" "--mem: '12Q'" run --mem 12Q -- true
expect_error "tiny mem" "--mem: '1M'" run --mem 1M -- true
expect_error "bad timeout" "--timeout: '-1'" run --timeout -1 -- true
expect_error "missing kernel" "/nonexistent/bzImage: cannot open the kernel" run --kernel /nonexistent/bzImage -- true

head -c 3000000 /dev/urandom >"$TMP/garbage"
expect_error "garbage kernel" "not a bzImage" run --kernel "$TMP/garbage" -- true
kernel=$(cd "$(dirname "$0")/../.." && pwd)/build/guest/6.1/kernel/vmlinuz
head -c 1000000 "$kernel" >"$TMP/truncated"
expect_error "truncated kernel" "truncated kernel image" run --kernel "$TMP/truncated" -- true
head -c 200000000 /dev/zero >"$TMP/huge-initrd"
expect_error "initrd too large" "initrd too large for guest RAM" run --mem 128M --initrd "$TMP/huge-initrd" -- true
expect_error "missing root" "--root: /nonexistent" run --root /nonexistent -- true
expect_error "bad share" "--share: ':/x'" run --share :/x -- true
expect_error "bad cache" "--cache: 'sometimes'" run --cache sometimes -- true
expect_error "bad transport" "--transport: 'usb' is not pci or mmio" run --transport usb -- true

# No /dev/kvm at all (hidden in a private mount namespace).
if command -v unshare >/dev/null; then
	unshare -m sh -c 'mount -t tmpfs none /dev && "$0" run -- true' "$FSVM" >"$TMP/out" 2>"$TMP/err"
	expect_eq "no kvm: status" 125 "$?"
	expect_match "no kvm: message" "no /dev/kvm" "$(cat "$TMP/err")"
else
	fail "unshare (util-linux) is missing"
fi

run_fsvm --version
expect_eq "--version" 0 "$rc"
expect_match "--version output" "^fsvm [0-9]" "$out"
run_fsvm --help
expect_match "--help output" "usage: fsvm run" "$out"
finish
