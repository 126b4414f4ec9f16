#!/bin/sh
# What fsvm run reads before its flags reaches the guest: the default
# config file, a --profile, --env-file's variables byte for byte, and
# --exec's string through the guest's sh -c with its status
# (tests/cli/config_and_completion.sh: their parsing and errors, natively).
. "$(dirname "$0")/lib.sh"

unset FSVM_CONFIG
export HOME="$TMP/home"
mkdir -p "$HOME/.config/fsvm"
cat >"$HOME/.config/fsvm/config.json" <<'JSON'
{"env": ["FROM_HOME=home", "LAST=home"],
 "profiles": {"ci": {"env": ["FROM_CI=ci", "LAST=ci"], "timeout": 300}}}
JSON
printf '# docker format\nB=  two  words \nC="quoted" $HOME\n\nFSVM_T_PASSED\nFSVM_T_UNSET\nLAST=file\n' >"$TMP/job.env"
chmod -R a+rX "$HOME" "$TMP/job.env"
export FSVM_T_PASSED="from the host"
unset FSVM_T_UNSET
cd "$TMP" || exit 1

run_fsvm run --profile ci --env-file "$TMP/job.env" -- \
	sh -c 'printf "%s|%s|[%s]|%s|%s|%s|%s\n" "$FROM_HOME" "$FROM_CI" "$B" "$C" "$FSVM_T_PASSED" "${FSVM_T_UNSET-unset}" "$LAST"'
expect_status "default file, profile, env file: status" 0 "$rc"
expect_eq "default file, profile, env file" 'home|ci|[  two  words ]|"quoted" $HOME|from the host|unset|file' "$out"
# The flags' --env after the file's, so it wins.
run_fsvm run --profile ci --env-file "$TMP/job.env" --env LAST=flag -- sh -c 'echo "$LAST"'
expect_eq "--env after --env-file" flag "$out"

# --exec: one string through the guest's sh -c, its status fsvm's.
run_fsvm run --exec 'echo a | tr a b; test -n "$FROM_HOME" && exit 3'
expect_status "--exec: status" 3 "$rc"
expect_eq "--exec: output" b "$out"
# A config's "exec", overridden by a command on the command line.
echo '{"exec": "echo from the file"}' >"$TMP/exec.json"
chmod a+r "$TMP/exec.json"
run_fsvm run --config "$TMP/exec.json"
expect_eq "config exec" "from the file" "$out"
run_fsvm run --config "$TMP/exec.json" -- echo from the flags
expect_eq "config exec, a command given" "from the flags" "$out"
finish
