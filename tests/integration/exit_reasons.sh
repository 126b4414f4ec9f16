#!/bin/sh
# Each way a run ends that CI must tell apart, produced by a real failure:
# --json's exit.reason is its code and exit.message fsvm's line (docs/json.md).
# A guest panic, a guest reset, --timeout, and a seccomp violation (the test
# hook FSVM_TEST_SECCOMP_VIOLATION, docs/HACKING.md), which also puts a raw
# terminal back. What fails before KVM is tests/cli/summary.sh's.
. "$(dirname "$0")/lib.sh"
mkdir "$TMP/json" && give_to_test_user "$TMP/json"

# summary FILE: "status|ended_by|reason|message" of a summary file.
summary() {
	python3 -c 'import json, sys
e = json.load(open(sys.argv[1]))["exit"]
print(e["status"], e["ended_by"], e["reason"], e["message"], sep="|")' "$1" 2>&1
}

run_fsvm run --timeout 300 --json-file "$TMP/json/panic.json" -- sh -c 'echo c > /proc/sysrq-trigger; sleep 100'
expect_status "panic: status" 125 "$rc"
expect_match "panic: summary" "^125\|fsvm\|guest_panic\|guest kernel panicked: sysrq triggered crash" \
	"$(summary "$TMP/json/panic.json")"

# sysrq b: an immediate reset, as a triple fault or the i8042's is.
run_fsvm run --timeout 300 --json-file "$TMP/json/reset.json" -- sh -c 'echo b > /proc/sysrq-trigger; sleep 100'
expect_status "reset: status" 125 "$rc"
expect_eq "reset: summary" "125|fsvm|guest_reset|guest rebooted before its command reported a status" \
	"$(summary "$TMP/json/reset.json")"

run_fsvm run --timeout 3 --json-file "$TMP/json/timeout.json" -- sleep 1000
expect_status "timeout: status" 124 "$rc"
expect_eq "timeout: summary" "124|timeout|timeout|guest timed out after 3 s" \
	"$(summary "$TMP/json/timeout.json")"

run_fsvm run --timeout 300 --json-file "$TMP/json/ok.json" -- sh -c 'exit 3'
expect_status "command: status" 3 "$rc"
expect_eq "command: summary" "3|command|None|None" "$(summary "$TMP/json/ok.json")"

# The violation: one line naming the call, 125, the summary; on a terminal
# put in raw mode, the terminal's modes as they were before.
line="seccomp: system call getppid (110) is not one fsvm makes: stopped (a bug in fsvm, or code that took it over)"
FSVM_TEST_SECCOMP_VIOLATION=1 run_fsvm run --timeout 300 --json-file "$TMP/json/seccomp.json" -- sleep 100
expect_status "seccomp: status" 125 "$rc"
expect_eq "seccomp: the line" "fsvm: $line" "$(echo "$err" | grep seccomp)"
expect_eq "seccomp: summary" "125|fsvm|seccomp|$line" "$(summary "$TMP/json/seccomp.json")"
# First, that fsvm does put the terminal in raw mode (a run killed there
# leaves it so), then that the violation puts it back.
cat >"$TMP/on_a_terminal.py" <<'PY'
import os, pty, signal, subprocess, sys, termios, time
master, slave = pty.openpty()
before = termios.tcgetattr(slave)
def start(env):
    return subprocess.Popen(sys.argv[1:], stdin=slave, stdout=slave,
                            stderr=subprocess.PIPE, env=env, start_new_session=True)
proc = start(os.environ)
deadline = time.time() + 300
while termios.tcgetattr(slave) == before and proc.poll() is None and time.time() < deadline:
    time.sleep(0.05)
raw = termios.tcgetattr(slave) != before
proc.send_signal(signal.SIGKILL)
proc.communicate()
print("raw" if raw else "never raw", end="|")
termios.tcsetattr(slave, termios.TCSANOW, before)
proc = start(dict(os.environ, FSVM_TEST_SECCOMP_VIOLATION="1"))
_, err = proc.communicate(timeout=300)
after = termios.tcgetattr(slave)
print(proc.returncode, "same" if after == before else "changed: %r -> %r" % (before, after),
      "\n".join(l for l in err.decode().splitlines() if l.startswith("fsvm: seccomp:")), sep="|")
PY
expect_eq "seccomp on a terminal" "raw|125|same|fsvm: $line" \
	"$(python3 "$TMP/on_a_terminal.py" "$FSVM" run --timeout 300 -- sleep 100 2>&1)"
finish
