#!/bin/sh
# --cpus and --mem reach the guest: it sees every CPU and about that much RAM.
# Its tick runs off the TSC deadline (the CPUID bit KVM leaves to us), as
# under QEMU, not off the local APIC's count register.
. "$(dirname "$0")/lib.sh"

run_fsvm run --cpus 2 --mem 256M -- sh -c 'grep -c ^processor /proc/cpuinfo; sed -n "s/^MemTotal: *\([0-9]*\) kB/\1/p" /proc/meminfo; cat /sys/devices/system/cpu/online; cat /sys/devices/system/clockevents/clockevent0/current_device'
expect_eq "status" 0 "$rc"
cpus=$(echo "$out" | sed -n 1p)
mem_kb=$(echo "$out" | sed -n 2p)
online=$(echo "$out" | sed -n 3p)
timer=$(echo "$out" | sed -n 4p)
expect_eq "CPUs" 2 "$cpus"
expect_eq "online CPUs" "0-1" "$online"
expect_eq "tick device" "lapic-deadline" "$timer"
# The kernel keeps some for itself: MemTotal is a little under 256 MiB.
[ "${mem_kb:-0}" -gt $((180 * 1024)) ] && [ "${mem_kb:-0}" -le $((256 * 1024)) ] ||
	fail "MemTotal ${mem_kb:-?} kB is not about 256 MiB"
finish
