#!/bin/sh
# DAX: file data is mapped from the host page cache, not copied by READ
# requests; writes through a mapping reach the host, host writes reach a
# guest mapping, and a full window is recycled without leaking mappings.
. "$(dirname "$0")/lib.sh"
ext4_dir 600M
share=$EXT4_DIR
head -c 256M /dev/urandom >"$share/big"
sum=$(md5sum <"$share/big" | cut -d' ' -f1)
printf 'before' >"$share/shared"
for i in $(seq 100); do head -c 2M /dev/zero >"$share/small$i"; done

# 1. Big read, mmap write, host write seen through a guest mapping.
"$FSVM" run -v --timeout 600 --share "$share:/mnt/d" -- python3 -c '
import mmap, os, subprocess, time
print("mount", [l.split()[3] for l in open("/proc/mounts") if " /mnt/d " in l][0])
print("sum", subprocess.run(["md5sum", "/mnt/d/big"], capture_output=True, text=True).stdout.split()[0])
f = open("/mnt/d/written", "w+b"); f.write(b"\0" * 8192); f.flush()
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
i=0
while [ ! -e "$share/ready" ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i + 1)); done
printf 'after!' | dd of="$share/shared" conv=notrunc status=none
wait $pid
rc=$?
out=$(cat "$TMP/out")
err=$(cat "$TMP/err")
expect_eq "status" 0 "$rc"
expect_match "mounted with DAX" "^mount .*dax=always" "$out"
expect_match "256 MiB checksum" "^sum $sum$" "$out"
expect_match "guest mapping before" "^guest sees before$" "$out"
expect_match "guest mapping sees the host's write" "^guest sees after!$" "$out"
expect_eq "write through a mapping" DAXWR "$(dd if="$share/written" bs=1 skip=4096 count=5 status=none)"
reqs=$(echo "$err" | grep 'share0 requests:')
expect_match "data came through mappings" "SETUPMAPPING [1-9]" "$reqs"
expect_match "no READ requests" " READ 0 " "$reqs"

# 2. A 128 MiB window (64 chunks of 2 MiB) and 200 MiB of files: the guest
# must recycle mappings; when it drops its caches none may stay mapped.
"$FSVM" run -v --timeout 600 --dax 128M --share "$share:/mnt/d" -- sh -c '
	for i in $(seq 100); do cat /mnt/d/small$i >/dev/null || exit 1; done
	sync; echo 3 >/proc/sys/vm/drop_caches; touch /mnt/d/dropped; sleep 10' \
	>"$TMP/out" 2>"$TMP/err" &
pid=$!
i=0
while [ ! -e "$share/dropped" ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i + 1)); done
sleep 2
vmm=$(pgrep -n -x fsvm)
left=$(grep -c "$share/small" "/proc/$vmm/maps")
wait $pid
expect_eq "recycling run" 0 "$?"
expect_match "the window was recycled" "REMOVEMAPPING [1-9]" "$(grep 'share0 requests:' "$TMP/err")"
expect_eq "host mappings left after the guest dropped its caches" 0 "$left"

finish
