#!/bin/sh
# A guest attacks the shares the way an attacker's review did: it touches DAX
# window pages it never mapped, reaches for the host's /proc, /sys and /dev,
# and, with fsvm started as root, tries to plant device nodes and set-id
# files. Each attack must fail and the VM, the shares and the host go on.
. "$(dirname "$0")/lib.sh"
ext4_dir 128M
share=$EXT4_DIR
printf 'file data' >"$share/data"
give_to_test_user "$share"

echo "fs_hostile: part 1" >&2
# 1. The DAX window: guest root maps the window's BAR through sysfs (with
# iomem=relaxed, so the kernel lets it) and reads and writes pages it never
# mapped, and writes into a page mapped read-only. The VM goes on, and no
# file changes.
run_fsvm run --timeout 300 --cmdline iomem=relaxed --share "$share:/mnt/s" -- python3 -c '
import glob, mmap, os
cat = open("/mnt/s/data").read()           # a read-only DAX mapping
dev = [d for d in glob.glob("/sys/bus/virtio/devices/virtio*")
       if os.path.basename(os.readlink(d + "/driver")) == "virtiofs"]
bars = []
for d in dev:
    pci = os.path.realpath(d + "/..")
    if os.path.exists(pci + "/resource2"):
        bars.append(pci + "/resource2")
print("windows", len(bars))
for bar in bars:
    size = os.path.getsize(bar)
    fd = os.open(bar, os.O_RDWR | os.O_SYNC)
    m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    last = size - 4096
    before = m[last]
    m[last] = 0x41
    m[0:4] = b"EVIL"                        # where a mapping may sit
    print("touched", before, m[last])
print("still running", cat)
'
expect_eq "window: status" 0 "$rc"
expect_match "window: the BARs were reached" "windows 2" "$out"
expect_match "window: the VM went on" "still running file data" "$out"
expect_eq "window: files unchanged" "file data" "$(cat "$share/data")"

echo "fs_hostile: part 2" >&2
# 2. The host's pseudo file systems are never shown: the host's / shared
# again, its /proc, /sys and /dev are empty and closed; nothing of them
# can be read; and none can be a share.
run_fsvm run --timeout 200 --share "/:/host:ro" -- sh -c '
	for d in proc sys dev; do
		echo "$d: $(ls -A /host/$d 2>&1 | wc -l) $(stat -c %a:%u /host/$d)"
	done
	cat /host/proc/self/status 2>&1 | head -n 1
	cat /host/proc/kcore 2>&1 | head -c 10 | wc -c
	cat /host/sys/kernel/hostname 2>&1
	ls /host/dev/kvm 2>&1; true'
expect_eq "pseudo: status" 0 "$rc"
expect_match "pseudo: /proc" "^proc: [01] 555:0$" "$(echo "$out" | grep '^proc:')"
expect_match "pseudo: /sys" "^sys: [01] 555:0$" "$(echo "$out" | grep '^sys:')"
expect_match "pseudo: /dev" "^dev: [01] 555:0$" "$(echo "$out" | grep '^dev:')"
expect_match "pseudo: no /proc/self" "self/status: No such file" "$out"
echo "$out" | grep -q '^Name:' && fail "pseudo: the guest read the host's /proc"
run_fsvm run --share /proc:/p -- true
expect_eq "pseudo: --share /proc" 125 "$rc"
expect_match "pseudo: --share /proc says why" "pseudo file system" "$err"

echo "fs_hostile: part 3" >&2
# 3. Started as root, guest root is still nobody on the host unless asked:
# files it makes are nobody's, it makes no device nodes, and it makes no
# set-user-ID file (nobody is no one the user chose: anyone could run it
# as nobody). --host-root (with :dev) is the trusted exception.
mkdir "$TMP/open" && chmod 1777 "$TMP/open"
run_fsvm_as_root run --timeout 200 --share "$TMP/open:/mnt/o" -- sh -c '
	touch /mnt/o/made && chmod 4755 /mnt/o/made
	mknod /mnt/o/sda b 8 0 2>&1 | grep -c "not permitted"
	cat /etc/shadow >/dev/null 2>&1 || echo "no shadow"'
expect_eq "as root: status" 0 "$rc"
expect_eq "as root: files are nobody's, not set-user-ID" "65534 755" "$(stat -c '%u %a' "$TMP/open/made")"
[ -e "$TMP/open/sda" ] && fail "as root: the guest made a block device on the host"
expect_match "as root: no shadow" "no shadow" "$out"
run_fsvm_as_root run --timeout 200 --host-root --share "$TMP/open:/mnt/o:dev" -- sh -c '
	mknod /mnt/o/null c 1 3 && chown 1234:5678 /mnt/o/null'
expect_eq "host root: status" 0 "$rc"
expect_eq "host root: device node" "character special file 1234:5678" "$(stat -c '%F %u:%g' "$TMP/open/null")"
finish
