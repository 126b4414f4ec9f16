#!/bin/sh
# Runs inside the guest: file operations on the share at $1, each printed as
# "ok NAME" or "not ok NAME"; fs_share.sh checks the host side afterwards.
set -u
d=$1
cd "$d" || exit 1
check() { # NAME COMMAND...
	name=$1
	shift
	if "$@" >/tmp/check.log 2>&1; then echo "ok $name"; else echo "not ok $name: $(head -c 300 /tmp/check.log)"; fi
}
py() { /usr/bin/python3 -c "$@"; }

check create sh -c 'echo created > new.txt'
check write sh -c 'printf "0123456789" > data.bin && printf ABC | dd of=data.bin bs=1 seek=3 conv=notrunc status=none'
check read sh -c '[ "$(cat data.bin)" = "012ABC6789" ]'
check append sh -c 'echo line1 > app.txt && echo line2 >> app.txt'
check truncate sh -c 'printf "0123456789" > trunc.txt && truncate -s 4 trunc.txt && [ "$(cat trunc.txt)" = 0123 ]'
check rename sh -c 'echo r > before && mv before after && [ ! -e before ]'
check rename-noreplace sh -c 'echo a > na && echo b > nb && ! mv -n --no-copy na nb 2>/dev/null; [ "$(cat nb)" = b ]'
check rename-exchange py 'import ctypes,os
open("xa","w").write("A"); open("xb","w").write("B")
libc=ctypes.CDLL(None, use_errno=True)
r=libc.renameat2(-100, b"xa", -100, b"xb", 2)
assert r == 0, os.strerror(ctypes.get_errno())
assert open("xa").read()=="B" and open("xb").read()=="A"'
check link sh -c 'echo l > orig && ln orig hard && [ "$(stat -c %h orig)" = 2 ]'
check symlink sh -c 'ln -s orig soft && [ "$(readlink soft)" = orig ] && [ "$(cat soft)" = l ]'
check chmod sh -c 'touch modes && chmod 640 modes && [ "$(stat -c %a modes)" = 640 ]'
check chown sh -c 'touch owned && chown 1234:5678 owned && [ "$(stat -c %u:%g owned)" = 1234:5678 ]'
check utimes sh -c 'touch -m -d "2001-02-03 04:05:06 UTC" times && [ "$(stat -c %Y times)" = 981173106 ]'
check xattr sh -c 'touch xat && setfattr -n user.fsvm -v hello xat && [ "$(getfattr --only-values -n user.fsvm xat)" = hello ] && setfattr -n user.gone -v x xat && setfattr -x user.gone xat && ! getfattr -n user.gone xat 2>/dev/null'
check mkdir sh -c 'mkdir -p dir/sub && [ -d dir/sub ]'
check rmdir sh -c 'mkdir gone && rmdir gone && [ ! -e gone ]'
check unlink sh -c 'echo x > del && rm del && [ ! -e del ]'
check readdir-10000 sh -c '[ "$(ls many | wc -l)" = 10000 ] && ls many | sort | cmp -s - expected-names' 
check fallocate sh -c 'fallocate -l 1M falloc && [ "$(stat -c %s falloc)" = 1048576 ]'
check lseek-holes py 'import os
fd=os.open("holes", os.O_CREAT|os.O_RDWR, 0o644)
os.pwrite(fd, b"x"*4096, 1<<20)
os.fsync(fd)  # with the writeback cache, dirty pages are not yet on the host
assert os.lseek(fd, 0, os.SEEK_DATA) == 1<<20
assert os.lseek(fd, 0, os.SEEK_HOLE) == 0'
check posix-locks py 'import fcntl,os,sys
f=open("locked","w")
fcntl.lockf(f, fcntl.LOCK_EX)
pid=os.fork()
if pid==0:
    g=open("locked","w")
    try:
        fcntl.lockf(g, fcntl.LOCK_EX|fcntl.LOCK_NB); os._exit(1)
    except OSError: os._exit(0)
_,st=os.waitpid(pid,0)
assert os.waitstatus_to_exitcode(st)==0, "second lock was granted"'
check flock sh -c 'touch flocked && flock flocked sh -c "! flock -n flocked true"'
check mmap-read py 'import mmap
f=open("data.bin","rb"); m=mmap.mmap(f.fileno(),0,prot=mmap.PROT_READ)
assert m[:10]==b"012ABC6789"'
check mmap-write py 'import mmap,os
f=open("mapped","w+b"); f.write(b"\0"*8192); f.flush()
m=mmap.mmap(f.fileno(),8192); m[100:105]=b"MMAPW"; m.flush(); m.close(); f.close()'
check statfs sh -c '[ "$(stat -f -c %b .)" -gt 0 ]'
check fsync sh -c 'echo s > synced && sync synced'
# FUSE's 1% of the dirty limit is lifted for a read-write share (guest init).
check dirty-limit sh -c '[ "$(cat /sys/class/bdi/$(mountpoint -d .)/max_ratio)" = 100 ]'
echo done
