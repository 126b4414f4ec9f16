#!/bin/sh
# `fsvm run` with no command on a terminal: an interactive shell. Driven
# through a pseudo-terminal (fsvm's controlling terminal, as a shell's job
# has it): the size reaches the guest, and so does a new size (SIGWINCH),
# Ctrl-C interrupts the guest's job (not fsvm), `exit` ends the run with
# the shell's status, Ctrl-A x ends it with 125, and the terminal's modes
# are as they were before either way.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/drive.py" <<'PY'
import fcntl, os, pty, re, select, struct, subprocess, sys, termios, time

mode, fsvm = sys.argv[1], sys.argv[2:]
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 37, 101, 0, 0))
before = termios.tcgetattr(slave)
err = open(os.environ["TMP"] + "/stderr", "wb")
# After setsid: the terminal becomes the new session's, so the kernel
# tells fsvm of a new size.
proc = subprocess.Popen(fsvm, stdin=slave, stdout=slave, stderr=err,
                        start_new_session=True,
                        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
seen = b""

def wait_for(pattern, timeout):
    global seen
    end = time.time() + timeout
    while time.time() < end:
        m = re.search(pattern, seen)
        if m:
            seen = seen[m.end():]
            return True
        r, _, _ = select.select([master], [], [], 1)
        if r:
            try:
                seen += os.read(master, 4096)
            except OSError:
                break
    print("TIMEOUT waiting for %r; last output: %r" % (pattern, seen[-300:]))
    return False

def send(text):
    os.write(master, text)

# All within run-all's 600 s a test, so that a shell that never answers is
# reported with what the terminal showed.
def session():
    if not wait_for(rb"[#$] ", 300):              # the shell's prompt
        return False
    if mode == "escape":
        send(b"\x01x")                            # Ctrl-A x: fsvm ends
        return True
    # Each command waits for the prompt: typed ahead, the guest's tty would
    # echo it before the shell prompts, and the answer would not start a line.
    send(b"echo $((6*7))\r")
    ok = wait_for(rb"\n42\r?\n", 60) and wait_for(rb"[#$] ", 60)
    send(b"stty size\r")
    ok &= wait_for(rb"\n37 101\r?\n", 60) and wait_for(rb"[#$] ", 60)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 132, 0, 0))
    time.sleep(1)                                 # SIGWINCH, then the guest
    send(b"stty size\r")
    ok &= wait_for(rb"\n50 132\r?\n", 60) and wait_for(rb"[#$] ", 60)
    send(b"sleep 600\r")
    time.sleep(3)
    send(b"\x03")                                 # Ctrl-C: the guest's
    send(b"echo interrupted-$((2*2))\r")
    ok &= wait_for(rb"interrupted-4\r?\n", 60)    # not 600 s later
    send(b"exit 3\r")
    return ok

ok = session()
try:
    status = proc.wait(60)
except subprocess.TimeoutExpired:
    proc.kill()
    status = "hung"
print("status", status)
after = termios.tcgetattr(slave)
print("modes restored", after == before)
print("ok", bool(ok))
PY

TMP=$TMP python3 "$TMP/drive.py" shell "$FSVM" run --timeout 900 >"$TMP/result" 2>&1
result=$(cat "$TMP/result")
expect_match "shell answered" "^ok True$" "$(grep '^ok ' "$TMP/result")"
expect_eq "exit status" "status 3" "$(grep '^status ' "$TMP/result")"
expect_eq "terminal restored" "modes restored True" "$(grep '^modes ' "$TMP/result")"
[ $failures -eq 0 ] || { echo "$result" >&2; tail -n 20 "$TMP/stderr" >&2; }

mkdir -p "$TMP/json" && give_to_test_user "$TMP/json"
TMP=$TMP python3 "$TMP/drive.py" escape "$FSVM" run --timeout 900 \
	--json-file "$TMP/json/summary.json" >"$TMP/result" 2>&1
expect_eq "Ctrl-A x: status" "status 125" "$(grep '^status ' "$TMP/result")"
expect_match "Ctrl-A x: fsvm's line" "^fsvm: ended with the escape key \(Ctrl-A x\)$" "$(tail -n 1 "$TMP/stderr")"
expect_eq "Ctrl-A x: the summary's reason" "escape_key" \
	"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit"]["reason"])' "$TMP/json/summary.json")"
expect_eq "Ctrl-A x: terminal restored" "modes restored True" "$(grep '^modes ' "$TMP/result")"
[ $failures -eq 0 ] || { cat "$TMP/result" >&2; tail -n 20 "$TMP/stderr" >&2; }
finish
