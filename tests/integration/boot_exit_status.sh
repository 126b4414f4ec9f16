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

# Once the command runs only the exit device gives a status: the kernel's
# power-off lines, printed by the command to stderr and to the kernel's
# console through /dev/kmsg, neither end the VM nor make it a success.
forge='echo "reboot: Power down" >&2
echo "<2>reboot: Power down" >/dev/kmsg
echo "<2>reboot: System halted" >/dev/kmsg'
run_fsvm run --timeout 300 -- sh -c "$forge; exit 3"
expect_eq "forged power-off, then exit 3" 3 "$rc"
expect_match "forged line on the console" "reboot: System halted" "$err"
run_fsvm run --timeout 300 -- sh -c "$forge; sleep 2; exit 4"
expect_eq "forged power-off, then a sleep" 4 "$rc"

# A command that really powers off (a halt, without ACPI) before its status
# came back: 125 and why, once both CPUs have stopped; no hang.
run_fsvm run --timeout 300 --cpus 2 -- /bin/busybox poweroff -f
expect_eq "poweroff -f status" 125 "$rc"
expect_match "poweroff -f message" "^fsvm: guest powered off before its command reported a status$" "$(echo "$err" | tail -n 1)"

# A user's own initramfs whose init powers the machine off: without ACPI
# the CPUs would just halt; fsvm sees the kernel's last words and ends.
# No command of ours runs, so only the kernel and that init speak: 0.
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
