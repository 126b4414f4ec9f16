#!/bin/sh
# Commands that cannot run, a panicking guest and a guest that never ends all
# end fsvm with a defined status and one line saying what happened.
. "$(dirname "$0")/lib.sh"

run_fsvm run -- no-such-command-here
expect_eq "not found" 127 "$rc"
expect_match "not found message" "no-such-command-here: command not found" "$err"

run_fsvm run -- /etc/passwd
expect_eq "not executable" 126 "$rc"

# The guest kernel panics: no hang, and fsvm's last lines say the panic and
# where (its first frames), as does --json with the whole report.
mkdir "$TMP/json" && give_to_test_user "$TMP/json"
run_fsvm run --timeout 300 --json="$TMP/json/panic.json" -- sh -c 'echo c > /proc/sysrq-trigger; sleep 100'
expect_eq "panic status" 125 "$rc"
expect_match "panic message" "^fsvm: guest kernel panicked: sysrq triggered crash" \
	"$(echo "$err" | grep '^fsvm: guest kernel panicked')"
expect_match "panic backtrace" "^fsvm: kernel: at sysrq_handle_crash\+0x[0-9a-f]+/0x[0-9a-f]+ < " \
	"$(echo "$err" | tail -n 1)"
expect_eq "panic json" "Kernel panic - not syncing: sysrq triggered crash|sysrq_handle_crash|True" \
	"$(python3 -c 'import json, sys
k = json.load(open(sys.argv[1]))["kernel_report"]
print(k["headline"], k["backtrace"][0].split("+")[0], "Call Trace:" in k["text"], sep="|")' "$TMP/json/panic.json" 2>&1)"

# A guest that reboots before its command finished.
run_fsvm run --timeout 300 -- sh -c 'echo b > /proc/sysrq-trigger; sleep 100'
expect_eq "reboot status" 125 "$rc"
expect_match "reboot message" "guest rebooted before its command reported a status" "$err"

run_fsvm run --timeout 3 -- sleep 1000
expect_eq "timeout status" 124 "$rc"
expect_match "timeout message" "timed out after 3 s" "$err"
finish
