# bash completion for fsvm: subcommands, fsvm run's options (the binary's
# own list, `fsvm --list-options`, so the two never disagree), the values
# of those that take one of a few words, and file names where an option
# takes a file. Installed by `make install` as
# PREFIX/share/bash-completion/completions/fsvm; works without the
# bash-completion package too (`. completion/fsvm.bash`).

# The options of the fsvm being completed (the word typed, ./fsvm
# included), asked once a binary: "--NAME" or "--NAME VALUE" a line.
_fsvm_options() {
	local bin=${1/#\~/$HOME}
	if [[ ${_fsvm_options_of-} != "$bin" ]]; then
		_fsvm_option_list=$("$bin" --list-options 2>/dev/null)
		_fsvm_options_of=$bin
	fi
}

# Whether option $1 takes a value (as a separate word).
_fsvm_takes_value() {
	[[ $'\n'$_fsvm_option_list$'\n' == *$'\n'"$1 VALUE"$'\n'* ]]
}

_fsvm_files() { # $1: -f (files) or -d (folders); the word is $cur
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen "$1" -- "$cur")
}

_fsvm_words() { # the words of $1 that start with $cur
	mapfile -t COMPREPLY < <(compgen -W "$1" -- "$cur")
}

_fsvm_value() { # the value of option $1
	case $1 in
	--guest-kernel)
		_fsvm_words "6.1 6.12 microvm"
		if [[ $cur == */* ]]; then _fsvm_files -d; fi ;;
	--cache) _fsvm_words "none auto always" ;;
	--transport) _fsvm_words "pci mmio" ;;
	--stdin) _fsvm_words "auto none" ;;
	--net)
		_fsvm_words "none user user,host-loopback tap:"
		if [[ ${#COMPREPLY[@]} == 1 && ${COMPREPLY[0]} == tap: ]]; then
			compopt -o nospace 2>/dev/null
		fi ;;
	--config | --env-file | --kernel | --initrd | --disk | --json | --json-file)
		_fsvm_files -f ;;
	--root | --modules | --share | --rodir | --rwdir | --cwd)
		_fsvm_files -d ;;
	*) COMPREPLY=() ;; # a number, a size, a name: nothing to offer
	esac
}

_fsvm_run() {
	local i=2 word
	# Past the options, the guest's command: a command, then files.
	while ((i < COMP_CWORD)); do
		word=${COMP_WORDS[i]}
		if [[ $word == -- ]]; then
			break
		elif [[ ${COMP_WORDS[i + 1]-} == = ]]; then
			((i += 3)) # --NAME=VALUE, split at the '='
			continue
		elif [[ $word == -* ]]; then
			if _fsvm_takes_value "$word"; then ((i++)); fi
		else
			break
		fi
		((i++))
	done
	if ((i < COMP_CWORD)); then
		[[ ${COMP_WORDS[i]} == -- ]] && ((i++))
		if ((i == COMP_CWORD)); then
			mapfile -t COMPREPLY < <(compgen -c -- "$cur")
		else
			_fsvm_files -f
		fi
		return
	fi
	local prev=${COMP_WORDS[COMP_CWORD - 1]}
	if [[ $cur == = ]]; then # --NAME=, the cursor after the '='
		cur=
		_fsvm_value "$prev"
	elif [[ $prev == = ]]; then
		_fsvm_value "${COMP_WORDS[COMP_CWORD - 2]}"
	elif _fsvm_takes_value "$prev"; then
		_fsvm_value "$prev"
	elif [[ $cur == -* ]]; then
		_fsvm_words "$(cut -d' ' -f1 <<<"$_fsvm_option_list")"
	fi
}

_fsvm() {
	local cur=${COMP_WORDS[COMP_CWORD]}
	COMPREPLY=()
	if ((COMP_CWORD == 1)); then
		_fsvm_words "run kconfig oci help version --help --version"
		return
	fi
	case ${COMP_WORDS[1]} in
	run)
		_fsvm_options "${COMP_WORDS[0]}"
		_fsvm_run ;;
	kconfig)
		if [[ $cur == -* ]]; then
			_fsvm_words "--net --disk --help"
		else
			_fsvm_files -f
		fi ;;
	oci)
		if ((COMP_CWORD == 2)); then
			_fsvm_words "create run start state kill delete exec features"
		fi ;;
	esac
}

complete -F _fsvm fsvm
