# Benchmark helpers (sourced): timing and min/median/max of samples.

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

# in_lab_if_needed SCRIPT ARGS...: re-runs the script inside the lab when this
# host's KVM cannot run a stock kernel, and exits with its status; returns
# only when already capable. With BENCH_LAB_IDLE=SECONDS the lab counts as
# hung when the script has not beaten (lab_alive) for that long. With
# BENCH_LAB_TRIES=N a lab that failed or hung is replaced, N labs at most:
# for scripts that keep their results in the tree and go on from them.
in_lab_if_needed() {
	local top lab rc
	top=$(cd "$(dirname "$0")/.." && pwd)
	"$top/tools/kvm-check" >/dev/null 2>&1 && return 0
	echo "bench: host KVM cannot run stock kernels; running inside the lab (emulated: compare ratios only)"
	for lab in $(seq "${BENCH_LAB_TRIES:-1}"); do
		"$top/tools/lab" --timeout 3600 ${BENCH_LAB_IDLE:+--idle "$BENCH_LAB_IDLE"} -- "$@"
		rc=$?
		case $rc in 124 | 125) ;; *) exit $rc ;; esac
		echo "bench: the lab failed or hung (exit $rc: a lab failure, not fsvm's)"
	done
	exit "$rc"
}

# lab_alive: tells tools/lab's idle watchdog that the script still makes
# progress (nothing outside the lab).
lab_alive() {
	[ "${LAB:-}" != 1 ] || echo "@@lab-alive@@" >/dev/ttyS0
}
