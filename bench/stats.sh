# Benchmark helpers (sourced from the top of the tree): timing, min/median/max
# of samples, and running in the lab.

# now_ms: monotonic-enough wall clock in milliseconds (bash's EPOCHREALTIME).
now_ms() {
	local t=${EPOCHREALTIME/./}
	echo $((10#$t / 1000))
}

# stats NUMBERS...: prints "min median max" (the median of an even count is
# the lower middle sample).
stats() {
	printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 }
		END { if (NR == 0) { print "- - -"; exit }
		      printf "%s %s %s\n", v[1], v[int((NR + 1) / 2)], v[NR] }'
}

# ratio A B: A/B to two decimals, "-" when A is missing or B is 0 or missing.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && a != "-" && b > 0) printf "%.2f", a / b; else print "-" }'; }

# The lab's resume and heartbeat helpers: lab_alive, lab_beat, lab_todo...
. tools/lab-resume.sh

# in_lab_if_needed SCRIPT ARGS...: re-runs the script inside the lab when this
# host's KVM cannot run a stock kernel, and exits with its status; returns
# only when already capable. With BENCH_LAB_IDLE=SECONDS the lab counts as
# hung when the script has not beaten (lab_alive) for that long. With
# BENCH_LAB_TRIES=N a lab that failed or hung is replaced, N labs at most:
# for scripts that keep their results in the tree and go on from them.
in_lab_if_needed() {
	tools/kvm-check >/dev/null 2>&1 && return 0
	echo "bench: host KVM cannot run stock kernels; running inside the lab (emulated: compare ratios only)"
	lab_resume bench "${BENCH_LAB_TRIES:-1}" --timeout 3600 ${BENCH_LAB_IDLE:+--idle "$BENCH_LAB_IDLE"} -- "$@"
	exit
}
