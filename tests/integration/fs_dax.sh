#!/bin/sh
# DAX: file data is mapped from the host page cache, not copied by READ
# requests; writes through a mapping reach the host, host writes reach a
# guest mapping, and a full window is recycled without leaking mappings.
# Files under 128 KiB (FUSE_DAX_MIN_FILE_SIZE) are read, not mapped.
. "$(dirname "$0")/lib.sh"
ext4_dir 600M
share=$EXT4_DIR
head -c 256M /dev/urandom >"$share/big"
sum=$(md5sum <"$share/big" | cut -d' ' -f1)
printf 'before' >"$share/shared" && truncate -s 128K "$share/shared"
head -c 4K /dev/urandom >"$share/tiny"
tiny_sum=$(md5sum <"$share/tiny" | cut -d' ' -f1)
# Files the guest writes through a mapping, and from one: mapped sizes.
for f in written copied; do truncate -s 128K "$share/$f" && give_to_test_user "$share/$f"; done
for i in $(seq 100); do head -c 2M /dev/zero >"$share/small$i"; done

head -c 4M /dev/zero | tr '\0' x >"$share/trunc"

# 1. Big read, mmap write, host write seen through a guest mapping.
"$FSVM" run -v --timeout 240 --share "$share:/mnt/d" -- python3 -c '
import mmap, os, subprocess, time
print("mount", [l.split()[3] for l in open("/proc/mounts") if " /mnt/d " in l][0])
print("sum", subprocess.run(["md5sum", "/mnt/d/big"], capture_output=True, text=True).stdout.split()[0])
print("tiny", subprocess.run(["md5sum", "/mnt/d/tiny"], capture_output=True, text=True).stdout.split()[0])
# Direct I/O from a DAX mapping: its pages are window pages, not RAM. Linux
# 6.1 refuses it (EINVAL); a kernel that sends them gets EFAULT; no hang.
bm = mmap.mmap(os.open("/mnt/d/big", os.O_RDONLY), 1 << 20, prot=mmap.PROT_READ)
out = os.open("/mnt/d/copied", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
try: print("copy from a mapping", os.write(out, memoryview(bm)[:1 << 20]))
except OSError as e: print("copy from a mapping", e.strerror)
os.close(out)
f = open("/mnt/d/written", "r+b")
m = mmap.mmap(f.fileno(), 8192); m[4096:4101] = b"DAXWR"; m.flush(); m.close(); os.fsync(f.fileno()); f.close()
g = open("/mnt/d/shared", "rb"); s = mmap.mmap(g.fileno(), 6, prot=mmap.PROT_READ)
print("guest sees", s[:6].decode())
open("/mnt/d/ready", "w").close()
for _ in range(600):
    if s[:6] == b"after!": break
    time.sleep(0.1)
print("guest sees", s[:6].decode())
' >"$TMP/out" 2>"$TMP/err" &
pid=$!
wait_for_file "$share/ready" $pid
printf 'after!' | dd of="$share/shared" conv=notrunc status=none
wait $pid
expect_status "status" 0 "$?"
out=$(cat "$TMP/out")
err=$(cat "$TMP/err")
expect_match "mounted with DAX" "^mount .*dax=inode" "$out"
expect_match "256 MiB checksum" "^sum $sum$" "$out"
expect_match "4 KiB checksum" "^tiny $tiny_sum$" "$out"
expect_match "extending write from a DAX mapping" "^copy from a mapping (1048576|Bad address|Invalid argument)$" "$out"
expect_match "guest mapping before" "^guest sees before$" "$out"
expect_match "guest mapping sees the host's write" "^guest sees after!$" "$out"
expect_eq "write through a mapping" DAXWR "$(dd if="$share/written" bs=1 skip=4096 count=5 status=none)"
reqs=$(echo "$err" | grep 'share0 requests:')
expect_match "data came through mappings" "SETUPMAPPING [1-9]" "$reqs"
expect_match "one READ request: the small file's" " READ 1 " "$reqs"

# 2. A 128 MiB window (64 chunks of 2 MiB) and 200 MiB of files: the guest
# must recycle mappings; when it drops its caches none may stay mapped.
"$FSVM" run -v --timeout 240 --dax 128M --share "$share:/mnt/d" -- sh -c '
	for i in $(seq 100); do cat /mnt/d/small$i >/dev/null || exit 1; done
	sync; echo 3 >/proc/sys/vm/drop_caches; touch /mnt/d/dropped; sleep 10' \
	>"$TMP/out" 2>"$TMP/err" &
pid=$!
wait_for_file "$share/dropped" $pid
sleep 2
# $pid is fsvm's own: fsvm-as-user execs it in the same process.
expect_eq "the recycling run's VMM" fsvm "$(cat "/proc/$pid/comm")"
left=$(grep -c "$share/small" "/proc/$pid/maps")
wait $pid
expect_status "recycling run" 0 "$?"
expect_match "the window was recycled" "REMOVEMAPPING [1-9]" "$(grep 'share0 requests:' "$TMP/err")"
expect_eq "host mappings left after the guest dropped its caches" 0 "$left"

# 3. The host truncates a file the guest has mapped: touching the lost pages
# must not hang or kill the VM; once the guest sees the new size, the access
# is a SIGBUS in the guest process; when the file grows back, so does its
# data. A process forked to touch the page reports what it saw.
"$FSVM" run -v --timeout 300 --share "$share:/mnt/d" -- sh -c 'python3 -c "
import mmap, os, time
def wait(name):
    for _ in range(3000):
        if os.path.exists(\"/mnt/d/\" + name): return
        time.sleep(0.1)
    raise SystemExit(\"no \" + name)
def touch(m):
    pid = os.fork()
    if pid == 0: os._exit(m[3 << 20])
    st = os.waitpid(pid, 0)[1]
    return \"signal %d\" % os.WTERMSIG(st) if os.WIFSIGNALED(st) else \"byte %d\" % os.WEXITSTATUS(st)
f = open(\"/mnt/d/trunc\", \"rb\")
m = mmap.mmap(f.fileno(), 4 << 20, prot=mmap.PROT_READ)
print(\"before\", chr(m[3 << 20]), flush=True)
open(\"/mnt/d/mapped\", \"w\").close()
wait(\"truncated\")
print(\"at once\", touch(m), flush=True)
time.sleep(1.5)
print(\"size\", os.stat(\"/mnt/d/trunc\").st_size)
print(\"after truncation\", touch(m), flush=True)
open(\"/mnt/d/seen\", \"w\").close()
wait(\"regrown\")
time.sleep(1.5)
print(\"size\", os.stat(\"/mnt/d/trunc\").st_size)
print(\"after regrowth\", touch(m), flush=True)
" && head -c 6 /mnt/d/shared && echo' >"$TMP/out" 2>"$TMP/err" &
pid=$!
wait_for_file "$share/mapped" $pid
truncate -s 0 "$share/trunc" && touch "$share/truncated"
wait_for_file "$share/seen" $pid
head -c 4M /dev/zero | tr '\0' y >"$share/trunc" && touch "$share/regrown"
wait $pid
expect_status "truncation run" 0 "$?"
out=$(cat "$TMP/out")
expect_match "mapped before" "^before x$" "$out"
expect_match "lost page at once: zeros or SIGBUS" "^at once (byte 0|signal 7)$" "$out"
expect_match "guest sees the new size" "^size 0$" "$out"
expect_match "lost page once the guest knows" "^after truncation signal 7$" "$out"
expect_match "guest sees the file grow back" "^size 4194304$" "$out"
expect_match "data back after regrowth" "^after regrowth byte 121$" "$out"
expect_match "the VM goes on" "^after!$" "$out"

# 4. A full disk: stores into a file's hole through DAX fail in the guest
# (ENOSPC from write(), SIGBUS for a mapping) instead of stalling the vCPU.
truncate -s 4M "$share/holey"
for size in 512M 256M 128M 64M 32M 16M 8M 4M 2M 1M 512K 256K 128K 64K 32K 16K 8K 4K; do
	fallocate -l $size "$share/fill.$size" 2>/dev/null || rm -f "$share/fill.$size"
done
give_to_test_user "$share/holey"
"$FSVM" run --timeout 200 --share "$share:/mnt/d" -- sh -c 'python3 -c "
import mmap, os
fd = os.open(\"/mnt/d/holey\", os.O_RDWR)
try:
    os.pwrite(fd, b\"z\" * 4096, 1 << 20)
    print(\"write ok\")
except OSError as e:
    print(\"write\", e.strerror)
m = mmap.mmap(fd, 4 << 20)
pid = os.fork()
if pid == 0:
    m[3 << 20] = 122
    os._exit(0)
st = os.waitpid(pid, 0)[1]
print(\"store\", \"signal %d\" % os.WTERMSIG(st) if os.WIFSIGNALED(st) else \"ok\")
" && head -c 6 /mnt/d/shared && echo' >"$TMP/out" 2>"$TMP/err"
expect_status "full disk run" 0 "$?"
out=$(cat "$TMP/out")
expect_match "write into a hole on a full disk" "^write No space left on device$" "$out"
expect_match "store into a hole on a full disk" "^store signal 7$" "$out"
expect_match "the VM goes on" "^after!$" "$out"

finish
