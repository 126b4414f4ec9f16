#!/bin/sh
# The guest command's exit status, stdout and stderr come back separately.
. "$(dirname "$0")/lib.sh"

run_fsvm run -- sh -c 'echo to-stdout; echo to-stderr >&2; exit 7'
expect_eq "exit status" 7 "$rc"
expect_eq "stdout" "to-stdout" "$out"
expect_match "stderr" "to-stderr" "$err"
case $out in *to-stderr*) fail "stderr leaked into stdout" ;; esac

# Arguments keep their spaces and quotes on their way to the guest.
run_fsvm run -- printf '[%s]\n' 'a b' '"q"' "it's" '' '*'
expect_eq "status" 0 "$rc"
expect_eq "arguments" "$(printf '[%s]\n' 'a b' '"q"' "it's" '' '*')" "$out"

run_fsvm run -- true
expect_eq "true" 0 "$rc"
run_fsvm run -- false
expect_eq "false" 1 "$rc"

# A user's own initramfs whose init powers the machine off: without ACPI
# the CPUs would just halt; fsvm sees the kernel's last words and ends.
mkdir -p "$TMP/initrd/bin" "$TMP/initrd/dev"
cp /bin/busybox "$TMP/initrd/bin/busybox"
printf '#!/bin/busybox sh\n/bin/busybox echo custom-init-ran\n/bin/busybox poweroff -f\n' >"$TMP/initrd/init"
chmod +x "$TMP/initrd/init"
mknod -m 600 "$TMP/initrd/dev/console" c 5 1 2>/dev/null
(cd "$TMP/initrd" && find . | cpio -o -H newc --quiet) >"$TMP/custom.cpio"
run_fsvm run --timeout 120 --initrd "$TMP/custom.cpio"
expect_eq "poweroff status" 0 "$rc"
expect_match "custom init ran" "custom-init-ran" "$err"
expect_match "poweroff message" "^fsvm: guest powered off$" "$(echo "$err" | tail -n 1)"
finish
