# Running work in the lab that outlives a lab falling over (sourced, POSIX sh).
# The lab's emulator now and then dies (tools/lab exits 125) or wedges (124: its
# --idle watchdog heard no beat), docs/LAB.md. A script that runs a list of items
# in the lab (tests, benchmark runs) keeps a results file outside it, in the
# shared tree: lab_todo and lab_finish mark each item there, and the script, run
# again in a new lab by lab_resume, goes on after the last item it finished. The
# item a lab fell over in runs again; one that brought down TRIES labs is given
# up as a lab failure, not the item's. While an item runs, lab_beat tells the
# lab's watchdog the work goes on, but only for as long as the item may run.
# Callers: tests/integration/run-all, tools/unit-run, tests/fuzz/run,
# bench/stats.sh (in_lab_if_needed: bench/boot and the other benchmarks), bench/fs.
# Every function's variables start with _lab (sh has no locals).

# lab_resume WHO LABS [tools/lab OPTIONS...] -- CMD ARGS...: runs CMD in a lab
# (tools/lab, from the top of the tree: the lab shares the current folder), and
# while the lab fails or hangs boots another, LABS labs at most. Returns CMD's
# status, or the last lab's 124 or 125 when LABS labs fell over; says each time
# on stderr, as WHO, that it was the lab, not CMD.
lab_resume() {
	_lab_who=$1 _lab_max=$2 _lab_n=1
	shift 2
	while :; do
		tools/lab "$@"
		_lab_rc=$?
		case $_lab_rc in 124 | 125) ;; *) return "$_lab_rc" ;; esac
		if [ "$_lab_n" -ge "$_lab_max" ]; then
			echo "$_lab_who: FAILED: the lab fell over (exit $_lab_rc) in each of $_lab_max lab(s): a lab failure, not a test failure" >&2
			return "$_lab_rc"
		fi
		echo "$_lab_who: lab $_lab_n of $_lab_max failed or hung (exit $_lab_rc: a lab failure, not a test failure); going on in a new lab" >&2
		_lab_n=$((_lab_n + 1))
	done
}

# The results file: the caller's own lines, and marks "@WORD NAME": "@start NAME"
# when an item starts, "@WORD NAME" (any other word: pass, fail, done...) when it
# has finished. NAME may hold spaces and any character.

# lab_todo RESULTS NAME TRIES: whether NAME is to run now; if so, marks
# "@start NAME". Not if it finished in an earlier lab, nor if TRIES labs
# started it and none saw it finish: it is then given up, marked
# "@lab-failed NAME" and said on stderr, a lab failure and no verdict on NAME.
lab_todo() {
	! lab_finished "$1" "$2" || return 1
	if [ "$(awk -v n="$2" '$1 == "@start" && substr($0, 8) == n' "$1" | wc -l)" -ge "$3" ]; then
		lab_finish "$1" "$2" lab-failed
		echo "LAB FAILURE $2: the lab fell over $3 times while it ran; given up (no verdict on it)" >&2
		return 1
	fi
	echo "@start $2" >>"$1"
}

# lab_finished RESULTS NAME: whether NAME is marked finished.
lab_finished() {
	awk -v n="$2" '$1 ~ /^@/ && $1 != "@start" && substr($0, length($1) + 2) == n { f = 1 }
		END { exit !f }' "$1"
}

# lab_finish RESULTS NAME WORD: marks NAME finished ("@WORD NAME").
lab_finish() {
	echo "@$3 $2" >>"$1"
}

# lab_count RESULTS WORD: how many items are marked "@WORD".
lab_count() {
	awk -v w="@$2" '$1 == w' "$1" | wc -l
}

# lab_alive: one beat for tools/lab's idle watchdog (in the lab only: its
# console, where nothing but "@@lab-alive@@" counts as a sign of life).
lab_alive() {
	[ "${LAB:-}" != 1 ] || echo "@@lab-alive@@" >/dev/ttyS0
}

# lab_beat SECONDS [PROGRESS]: in the lab, beats every 10 s in the background
# for SECONDS, the most the item may take: one stuck past that, even in an
# unkillable state, falls silent and the watchdog replaces the lab. With
# PROGRESS, only while that file was written in the last LAB_BEAT_QUIET
# seconds (240): an item whose output stops is as good as stuck.
# lab_beat_stop ends the beats (lab_beat ends those before it).
lab_beat() {
	[ "${LAB:-}" = 1 ] || return 0
	lab_beat_stop
	(
		_lab_end=$(($(date +%s) + $1))
		while [ "$(date +%s)" -lt "$_lab_end" ]; do
			if [ -z "${2:-}" ] ||
				[ $(($(date +%s) - $(stat -c %Y "$2"))) -lt "${LAB_BEAT_QUIET:-240}" ]; then
				lab_alive
			fi
			sleep 10
		done
	) &
	_lab_beat_pid=$!
}
lab_beat_stop() {
	[ -z "${_lab_beat_pid:-}" ] || kill "$_lab_beat_pid" 2>/dev/null
	_lab_beat_pid=
}
