#!/bin/sh
# What fsvm run reads before its flags (the default config file,
# $FSVM_CONFIG, --profile, --env-file), --exec and --help's precedence,
# the bash completion and the man page's sections. Needs no KVM, no guest
# and no root: a file fsvm applied shows as the summary it names
# (json-file), written whatever KVM this host has (--setup-only: none
# boots a guest); what reaches the guest is tests/integration/cli_config.sh's.
FSVM=$(cd "$(dirname "$0")/../.." && pwd)/fsvm
. "$(dirname "$0")/../integration/lib.sh"

unset FSVM_CONFIG
export HOME="$TMP/home"
mkdir -p "$HOME/.config/fsvm"

# ran_with WHAT SUMMARY: fsvm ran (to a set-up end or a guest) with no
# complaint about its options, and wrote the summary a file asked for.
ran_with() {
	[ -s "$2" ] || fail "$1: no summary $2 (status $rc: $err)"
	case $err in *"key '"* | *"--profile"* | *"--env-file"* | *FSVM_CONFIG*) fail "$1: $err" ;; esac
	rm -f "$2"
}

# The default file, ~/.config/fsvm/config.json; $FSVM_CONFIG instead.
echo "{\"json-file\": \"$TMP/home.json\"}" >"$HOME/.config/fsvm/config.json"
run_fsvm run --setup-only -- true
ran_with "~/.config/fsvm/config.json" "$TMP/home.json"
echo "{\"json-file\": \"$TMP/env.json\"}" >"$TMP/env-config.json"
FSVM_CONFIG=$TMP/env-config.json run_fsvm run --setup-only -- true
ran_with "\$FSVM_CONFIG" "$TMP/env.json"
[ -e "$TMP/home.json" ] && fail "\$FSVM_CONFIG: the home's file was read too"
FSVM_CONFIG= run_fsvm run --setup-only -- true
[ -e "$TMP/home.json" ] && fail "FSVM_CONFIG empty: the home's file was read"
FSVM_CONFIG=$TMP/missing.json expect_error "\$FSVM_CONFIG missing" \
	"^fsvm: FSVM_CONFIG=$TMP/missing.json: No such file or directory$" run -- true
printf '{"cpus": 2,\n "cpus": 3}\n' >"$HOME/.config/fsvm/config.json"
expect_error "default file: a key twice" \
	"^fsvm: $HOME/.config/fsvm/config.json: line 2: a key given twice$" run -- true
printf '{"cpus": 2, /* two */ "mem": "1G"}\n' >"$HOME/.config/fsvm/config.json"
expect_error "default file: a comment" "config.json: line 1: not valid JSON" run -- true
# --help wins over a broken default file.
run_fsvm run --help
expect_eq "--help, a bad default file: status" 0 "$rc"
rm "$HOME/.config/fsvm/config.json"

# --profile: a profile's options after the file's, before the flags.
cat >"$TMP/profiles.json" <<JSON
{"cpus": 1, "profiles": {"ci": {"json-file": "$TMP/ci.json", "timeout": 600},
                         "dev": {"verbose": true}}}
JSON
run_fsvm run --setup-only --config "$TMP/profiles.json" --profile ci -- true
ran_with "--profile ci" "$TMP/ci.json"
expect_error "--profile missing" \
	"^fsvm: --profile 'big': no such profile \(there are: ci, dev\)$" \
	run --config "$TMP/profiles.json" --profile big -- true
expect_error "--profile, no file" "^fsvm: --profile 'ci': there is no config file" run --profile ci -- true
printf '{"profiles": {"ci": {"mem": "lots"}}}\n' >"$TMP/bad-profile.json"
expect_error "a bad profile" \
	"^fsvm: $TMP/bad-profile.json: profile 'ci': key 'mem': 'lots' is not a size" \
	run --config "$TMP/bad-profile.json" --profile ci -- true

# --env-file, docker's format.
printf '# the job\nA=1\n\n  B=two words\nHOME\n' >"$TMP/good.env"
run_fsvm run --setup-only --env-file "$TMP/good.env" --json-file "$TMP/envfile.json" -- true
ran_with "--env-file" "$TMP/envfile.json"
printf 'A=1\n# fine\nMY VAR=1\n' >"$TMP/bad.env"
expect_error "--env-file: a bad line" \
	"^fsvm: --env-file $TMP/bad.env:3: 'MY VAR=1' is not NAME=VALUE or NAME" \
	run --env-file "$TMP/bad.env" -- true
expect_error "--env-file missing" "^fsvm: --env-file $TMP/none.env: No such file or directory$" \
	run --env-file "$TMP/none.env" -- true
echo "{\"env-file\": [\"$TMP/bad.env\"]}" >"$TMP/env-file.json"
expect_error "env-file in a config" "^fsvm: $TMP/env-file.json: key 'env-file': --env-file $TMP/bad.env:3:" run --config "$TMP/env-file.json" -- true

# --exec: the command, so not with another.
run_fsvm run --setup-only --exec 'echo hi' --json-file "$TMP/exec.json"
ran_with "--exec" "$TMP/exec.json"
expect_error "--exec and a command" "^fsvm: --exec: its CMD is the command .* so 'ls' after it does not apply$" \
	run --exec 'echo hi' -- ls
expect_error "--exec empty" "^fsvm: --exec: the command is empty$" run --exec ''

# --help wins over every other flag and mistake before the command.
for args in "run --cpus --help" "run --bogus --exec x -h" "run --env-file $TMP/bad.env --help" \
	"kconfig a b --help" "bogus --help"; do
	# shellcheck disable=SC2086 # words, on purpose
	run_fsvm $args
	expect_eq "fsvm $args: status" 0 "$rc"
	expect_match "fsvm $args: usage" "^Usage: fsvm run" "$out"
done
run_fsvm run --setup-only -- ls --help # the command's word, not --help
case $out in *Usage:*) fail "-- ls --help: fsvm took the command's --help" ;; esac
expect_error "a near miss of two" "did you mean '--entrypoint', '--env' or '--net'" run --ent A=1 -- true
expect_error "a near miss of a command" "unknown command 'rnu' \(did you mean 'run'\?\)" rnu

# Every option in the table is in --help, and is completed.
"$FSVM" --list-options >"$TMP/options" || fail "--list-options: status $?"
"$FSVM" --help >"$TMP/help"
cut -d' ' -f1 "$TMP/options" | grep '^--' | while read -r opt; do
	grep -q -- "$opt[] ,=[]" "$TMP/help" || grep -q -- "$opt\$" "$TMP/help" || echo "$opt"
done >"$TMP/undocumented"
[ -s "$TMP/undocumented" ] && fail "--help lacks $(tr '\n' ' ' <"$TMP/undocumented")"

# The completion, sourced into a plain bash: COMPREPLY for a few lines.
command -v bash >/dev/null || fail "no bash"
complete_line() { # WORDS...: what the completion offers for the last
	bash --norc --noprofile -c '
		. "$1/completion/fsvm.bash" || exit 1
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		cd "$TMPDIR_FOR_FILES" || exit 1
		_fsvm
		printf "%s\n" "${COMPREPLY[@]}" | sort' \
		sh "$TOP" "$@"
}
export TMPDIR_FOR_FILES=$TMP
mkdir "$TMP/guests" && : >"$TMP/vm-a.json" && : >"$TMP/vm-b.json"
expect_eq "complete: subcommands" "kconfig
oci
run" "$(complete_line "$FSVM" "" | grep -v -- '^-\|^help$\|^version$')"
expect_eq "complete: --cp" "--cpus" "$(complete_line "$FSVM" run --cp)"
expect_eq "complete: --e" "--entrypoint
--env
--env-file
--exec" "$(complete_line "$FSVM" run --e)"
expect_eq "complete: --cache" "always
auto
none" "$(complete_line "$FSVM" run --cache "")"
expect_eq "complete: --cache=a" "always
auto" "$(complete_line "$FSVM" run --cache = a)"
expect_eq "complete: --guest-kernel" "6.1
6.12
microvm" "$(complete_line "$FSVM" run -v --guest-kernel "")"
expect_eq "complete: --transport" "mmio" "$(complete_line "$FSVM" run --cpus 2 --transport m)"
expect_eq "complete: --stdin" "none" "$(complete_line "$FSVM" run --stdin n)"
expect_eq "complete: --net" "tap:" "$(complete_line "$FSVM" run --net t)"
expect_eq "complete: --config FILE" "vm-a.json
vm-b.json" "$(complete_line "$FSVM" run --config vm-)"
expect_eq "complete: --root DIR" "guests" "$(complete_line "$FSVM" run --root gu)"
expect_eq "complete: the guest command's options are its own" "" \
	"$(complete_line "$FSVM" run --cpus 2 echo --cp)"
expect_eq "complete: kconfig" "--disk
--help
--net" "$(complete_line "$FSVM" kconfig --)"
# Every option fsvm has, and only those, after "run --".
expect_eq "complete: every option" "$(cut -d' ' -f1 "$TMP/options" | grep '^--' | sort)" \
	"$(complete_line "$FSVM" run --)"

# The man page: its sections, and the usages one a line in SYNOPSIS.
page=$TOP/build/fsvm.1
if [ -s "$page" ]; then
	man -l "$page" 2>/dev/null </dev/null | col -b >"$TMP/man.txt"
	for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" ENVIRONMENT FILES; do
		grep -qx "$section" "$TMP/man.txt" || fail "man page: no $section section"
	done
	sed -n '/^SYNOPSIS$/,/^DESCRIPTION$/p' "$TMP/man.txt" >"$TMP/synopsis"
	for usage in "fsvm run \[OPTIONS\] \[--\] \[CMD \[ARGS...\]\]" \
		"fsvm kconfig \[--net\] \[--disk\] \[.config\]" "fsvm oci COMMAND \[ARGS...\]"; do
		grep -Eq "^ +$usage\$" "$TMP/synopsis" || fail "man page: no SYNOPSIS line '$usage': $(cat "$TMP/synopsis")"
	done
	sed -n '/^ENVIRONMENT$/,/^FILES$/p' "$TMP/man.txt" >"$TMP/environment"
	for var in FSVM_CONFIG FSVM_GUEST_DIR FSVM_GUEST_KERNEL; do
		grep -q "^ *$var\$" "$TMP/environment" || fail "man page: ENVIRONMENT lacks $var"
	done
	sed -n '/^EXIT STATUS$/,/^[A-Z]/p' "$TMP/man.txt" | grep -q '^ *125' ||
		fail "man page: EXIT STATUS lacks 125"
	sed -n '/^OPTIONS$/,/^EXIT STATUS$/p' "$TMP/man.txt" | grep -q 'FSVM_GUEST_DIR$' &&
		fail "man page: the environment is inside OPTIONS"
	# FILES names what make install writes: every path under PREFIX in
	# its recipe is (a folder of) one FILES names.
	sed -n '/^FILES$/,/^EXAMPLES$/p' "$TMP/man.txt" | grep -o 'PREFIX/[^ ,]*' |
		sed 's|^PREFIX|/P|' >"$TMP/files"
	make -s -n -C "$TOP" install PREFIX=/P 2>/dev/null | grep -o '/P/[A-Za-z0-9/._-]*' | sort -u |
		while read -r path; do
			grep -q "^${path%/}" "$TMP/files" || echo "$path"
		done >"$TMP/unnamed"
	[ -s "$TMP/unnamed" ] && fail "man page: FILES does not name $(tr '\n' ' ' <"$TMP/unnamed")"
	for f in /P/bin/fsvm /P/bin/fsvm-runtime /P/share/man/man1/fsvm.1 \
		/P/share/bash-completion/completions/fsvm; do
		grep -qx "$f" "$TMP/files" || fail "man page: FILES lacks ${f#/P/}"
	done
else
	fail "no $page (make man)"
fi
finish
