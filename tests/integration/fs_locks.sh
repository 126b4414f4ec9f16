#!/bin/sh
# Locks on shares: waiting for one never holds a queue (the unlock comes on
# it), a lock held on the host ends with --timeout, and a read-only share
# keeps its locks inside the guest.
. "$(dirname "$0")/lib.sh"
ext4_dir 64M
share=$EXT4_DIR
: >"$share/lockfile"
printf 'file data' >"$share/data"
give_to_test_user "$share"

echo "fs_locks: part 1" >&2
# 1. Two guest processes contend for a POSIX lock, then for a flock,
# and both finish (the waiter must not hold the queue the unlock comes on).
# A third waits and is killed: the share stays usable meanwhile.
run_fsvm run --timeout 300 --share "$share:/mnt/s" -- python3 -c '
import fcntl, os, signal, time
f = "/mnt/s/lockfile"
def child(kind, hold):
    pid = os.fork()
    if pid == 0:
        fd = os.open(f, os.O_RDWR)
        (fcntl.lockf if kind == "posix" else fcntl.flock)(fd, fcntl.LOCK_EX)
        time.sleep(hold)
        os._exit(0)
    return pid
for kind in ("posix", "flock"):
    holder = child(kind, 3)
    time.sleep(1)
    waiter = child(kind, 0)
    time.sleep(0.5)
    open("/mnt/s/meanwhile-" + kind, "w").write(str(len(os.listdir("/mnt/s"))))
    for p in (holder, waiter):
        os.waitpid(p, 0)
    print(kind, "both finished")
fd = os.open(f, os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX)
victim = child("posix", 0)
time.sleep(1)
os.kill(victim, signal.SIGKILL)
print("usable after the kill:", open("/mnt/s/data").read())
fcntl.lockf(fd, fcntl.LOCK_UN)
os.waitpid(victim, 0)
print("killed waiter gone")
'
expect_eq "locks: status" 0 "$rc"
expect_eq "locks" "posix both finished
flock both finished
usable after the kill: file data
killed waiter gone" "$out"
[ -s "$share/meanwhile-posix" ] || fail "locks: the share did not answer while a POSIX lock was waited for"

echo "fs_locks: part 2" >&2
# 2. --timeout ends a guest that waits for a lock a host process holds, and
# promptly (a queue that waits would have wedged the reset and the exit).
# -o: the lock is flock's own, so killing flock (not its sleep) drops it.
# The sleep says its pid, so that it goes too.
flock -o "$share/lockfile" sh -c 'echo $$ >"$0"; exec sleep 120' "$TMP/sleep.pid" &
holder=$!
sleep 1
start=$(date +%s)
run_fsvm run --timeout 30 --share "$share:/mnt/s" -- flock /mnt/s/lockfile true
kill "$(cat "$TMP/sleep.pid")" $holder 2>/dev/null
wait $holder 2>/dev/null
expect_eq "host-held lock: status" 124 "$rc"
[ $(($(date +%s) - start)) -lt 100 ] || fail "host-held lock: fsvm took $(($(date +%s) - start)) s to end after its 30 s timeout"

echo "fs_locks: part 3" >&2
# 3. A read-only share keeps locks in the guest: the host's own flock on the
# file goes through while the guest holds one.
# -v: should the guest stall, the requests it made are in the failure.
"$FSVM" run -v --timeout 200 --share "$share:/mnt/ro:ro" -- sh -c '
	flock /mnt/ro/lockfile sh -c "touch /tmp/held; sleep 20" &
	while [ ! -e /tmp/held ]; do sleep 0.2; done
	echo holding; sleep 25' >"$TMP/ro.out" 2>&1 &
pid=$!
i=0
while ! grep -q holding "$TMP/ro.out" && [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do
	sleep 0.5
	i=$((i + 1))
done
grep -q holding "$TMP/ro.out" || fail "read-only share: the guest never held its lock: $(cat "$TMP/ro.out")"
flock -n "$share/lockfile" true || fail "read-only share: a guest's lock is held on the host"
wait $pid

finish
