#!/bin/sh
# --gdb: Debian's gdb debugs the microVM guest's kernel (its vmlinux has a
# symbol table, build/guest/microvm/kernel/vmlinux) from its first
# instruction (--gdb-wait): a hardware breakpoint, then a software one (a
# hardware one on an emulated CPU, below) at the system call the command
# makes (sh reads $PPID with getppid), the pc
# and a segment register, a kernel variable read through the guest's page
# tables, a single step, a watchpoint, and a detach after which the
# command's output and status are as without gdb. The stub listens on
# 127.0.0.1 only, or on a UNIX socket of mode 0600; a port in use is one
# line and 125.
. "$(dirname "$0")/lib.sh"
vmlinux=$TOP/build/guest/microvm/kernel/vmlinux
[ -r "$vmlinux" ] || { echo "FAIL: no $vmlinux (make guest-microvm)" >&2; exit 1; }
port=$((20000 + $$ % 20000))
# The lab's emulated CPU (QEMU's TCG, "QEMU Virtual CPU") does not exit to
# KVM on an int3 whose #BP KVM intercepts, so the guest takes gdb's
# breakpoint itself (and oopses): there the system call gets a hardware
# breakpoint, and software ones are left to real CPUs.
break=break
if grep -q '^model name.*QEMU Virtual CPU' /proc/cpuinfo; then
	break=hbreak
	echo "gdb_stub: an emulated CPU: no software breakpoint (hbreak instead)"
fi

# listening PORT PID: waits up to 60 s for fsvm PID to listen on PORT.
listening() {
	i=0
	while [ $i -lt 600 ] && kill -0 "$2" 2>/dev/null; do
		ss -ltnH "sport = :$1" | grep -q . && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

"$FSVM" run --guest-kernel microvm --timeout 500 --gdb "$port" --gdb-wait -v \
	-- sh -c 'echo "ppid=$PPID"; exit 3' >"$TMP/out" 2>"$TMP/err" &
pid=$!
listening "$port" $pid || fail "fsvm does not listen on $port"
expect_eq "listens on the loopback address alone" "127.0.0.1:$port" \
	"$(ss -ltnH "sport = :$port" | awk '{print $4}')"
expect_match "-v says where" "gdb: listening on 127.0.0.1:$port" "$(cat "$TMP/err")"

# The kernel's page tables hold the system call's address only once it
# runs: hbreak there first, the software breakpoint after.
timeout 400 gdb -nx -batch "$vmlinux" \
	-ex 'set pagination off' -ex 'set confirm off' \
	-ex "target remote 127.0.0.1:$port" \
	-ex 'printf "first-stop pc=%lx\n", $pc' \
	-ex 'hbreak start_kernel' -ex 'continue' \
	-ex 'printf "at start_kernel: %d\n", $pc == (long)&start_kernel' \
	-ex 'delete' -ex "$break __x64_sys_getppid" -ex 'continue' \
	-ex 'info symbol $pc' \
	-ex 'printf "pc=%lx sym=%lx cs=%x\n", $pc, (long)&__x64_sys_getppid, $cs' \
	-ex 'bt 1' \
	-ex 'dump binary memory '"$TMP"'/init_task.bin (long)&init_task (long)&init_task+16384' \
	-ex 'x/2gx (long)&init_task' \
	-ex 'stepi' -ex 'printf "stepped pc=%lx\n", $pc' \
	-ex 'delete' -ex 'watch *(long *)&jiffies' -ex 'continue' \
	-ex 'printf "watched pc=%lx\n", $pc' \
	-ex 'delete' -ex 'info registers rip eflags cs ss fs_base cr3' \
	-ex 'p $xmm0.uint128' \
	-ex 'detach' >"$TMP/gdb" 2>&1
gdb_rc=$?
wait $pid
rc=$?
gdb_out=$(cat "$TMP/gdb")
expect_eq "gdb's status" 0 "$gdb_rc"
expect_match "stopped before the first instruction" "first-stop pc=[0-9a-f]+" "$gdb_out"
expect_match "hardware breakpoint" "at start_kernel: 1" "$gdb_out"
expect_match "breakpoint at the system call" "[Bb]reakpoint 2, (0x[0-9a-f]+ in )?__x64_sys_getppid" "$gdb_out"
expect_match "info symbol" "__x64_sys_getppid in section \.text" "$gdb_out"
line=$(printf '%s\n' "$gdb_out" | grep '^pc=')
pc=$(echo "$line" | sed 's/^pc=\([0-9a-f]*\) .*/\1/')
expect_match "pc at the symbol, kernel code segment" "^pc=$pc sym=$pc cs=10$" "$line"
expect_match "backtrace names it" "#0 .*__x64_sys_getppid" "$gdb_out"
strings "$TMP/init_task.bin" 2>/dev/null | grep -q '^swapper' ||
	fail "init_task's comm (swapper) not in its memory"
stepped=$(printf '%s\n' "$gdb_out" | sed -n 's/^stepped pc=//p')
[ -n "$stepped" ] && [ "$stepped" != "$pc" ] || fail "stepi: pc $pc, then [$stepped]"
expect_match "watchpoint" "Hardware watchpoint 3: \*\(long \*\)&jiffies" "$gdb_out"
expect_match "watchpoint fired" "New value = " "$gdb_out"
expect_match "system registers" "cr3 +0x[0-9a-f]+" "$gdb_out"
expect_match "detached" "Detaching from program|\[Inferior 1 .*detached\]" "$gdb_out"
[ $failures -eq 0 ] || tail -n 40 "$TMP/gdb" >&2
expect_status "status after detach" 3 "$rc"
expect_match "output after detach" "^ppid=[0-9]+$" "$(cat "$TMP/out")"

# A UNIX socket: the user's, mode 0600; gdb that detaches at once leaves
# a guest that runs as without it.
mkdir "$TMP/sock"
give_to_test_user "$TMP/sock"
sock=$TMP/sock/gdb
"$FSVM" run --guest-kernel microvm --timeout 300 --gdb "$sock" --gdb-wait \
	-- echo unix-ok >"$TMP/out" 2>"$TMP/err" &
pid=$!
i=0
while [ ! -S "$sock" ] && [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
expect_eq "socket's owner and mode" "$TEST_UID 600" "$(stat -c '%u %a' "$sock" 2>&1)"
timeout 120 gdb -nx -batch -ex "target remote $sock" -ex 'info threads' \
	-ex 'detach' >"$TMP/gdb" 2>&1
expect_match "threads over the socket" "Thread 1 " "$(cat "$TMP/gdb")"
wait $pid
rc=$?
expect_status "status over the socket" 0 "$rc"
expect_eq "output over the socket" "unix-ok" "$(cat "$TMP/out")"

# A port someone else listens on: one line, 125, at set-up.
# Another port: gdb's own may still be in TIME_WAIT, which fsvm ignores.
busy=$((port + 1))
python3 -c "import socket,time
s=socket.socket(); s.bind(('127.0.0.1', $busy)); s.listen(); time.sleep(60)" &
holder=$!
sleep 1
expect_error "port in use" "^fsvm: gdb: cannot listen on 127.0.0.1:$busy \(Address already in use\)$" \
	run --guest-kernel microvm --gdb "$busy" -- true
kill $holder
finish
