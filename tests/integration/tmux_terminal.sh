#!/bin/sh
# `fsvm run` in a tmux window, as a user runs it: the interactive shell
# sees the window's size, a resized window's new size (SIGWINCH through
# tmux), and Ctrl-A x typed there ends the VM with 125 and reason
# escape_key in the summary. interactive_shell.sh drives a bare
# pseudo-terminal; this is the multiplexer users have.
. "$(dirname "$0")/lib.sh"

command -v tmux >/dev/null || { fail "no tmux (tools/deps installs it)"; finish; }
# A server of the test's own; no status line, so the pane is the window.
printf 'set -g status off\n' >"$TMP/tmux.conf"
tmx() { tmux -L "fsvm-test-$$" -f "$TMP/tmux.conf" "$@"; }
trap 'tmx kill-server 2>/dev/null; cleanup' EXIT

# wait_pane REGEX SECONDS: until a line of the pane matches.
wait_pane() {
	i=0
	while [ "$i" -lt "$2" ]; do
		tmx capture-pane -p -t vm 2>/dev/null | grep -Eq "$1" && return 0
		sleep 1
		i=$((i + 1))
	done
	fail "the pane never showed /$1/ in $2 s; it shows: $(tmx capture-pane -p -t vm 2>/dev/null | grep . | tail -n 5)"
	return 1
}

mkdir -p "$TMP/out" && give_to_test_user "$TMP/out"
tmx new-session -d -s vm -x 100 -y 30 \
	"$FSVM run --timeout 500 --json-file $TMP/out/summary.json 2>$TMP/stderr; echo \$? >$TMP/status"
if wait_pane '[#$] ?$' 300; then
	tmx send-keys -t vm 'stty size' Enter
	wait_pane '^30 100$' 60
	tmx resize-window -t vm -x 132 -y 50
	sleep 1 # the SIGWINCH, then the guest's new size
	tmx send-keys -t vm 'clear; stty size' Enter
	wait_pane '^50 132$' 60
	tmx send-keys -t vm C-a x
fi
i=0
while [ ! -s "$TMP/status" ] && [ "$i" -lt 120 ]; do
	sleep 1
	i=$((i + 1))
done
expect_eq "Ctrl-A x in tmux: status" 125 "$(cat "$TMP/status" 2>/dev/null)"
expect_match "Ctrl-A x in tmux: fsvm's line" "^fsvm: ended with the escape key \(Ctrl-A x\)$" \
	"$(tail -n 1 "$TMP/stderr" 2>/dev/null)"
expect_eq "Ctrl-A x in tmux: the summary's reason" "escape_key" \
	"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit"]["reason"])' "$TMP/out/summary.json" 2>&1)"
[ $failures -eq 0 ] || tail -n 20 "$TMP/stderr" >&2
finish
