# cli/orch.bash: bash completion of orch (docs/cli.md). Load it with
#   . cli/orch.bash      (or copy it to /etc/bash_completion.d/orch)
# Commands and their options complete; session ids complete from
# `orch list --json` (the API, with your settings) where a command takes one.
_orch_sessions() {
	orch --json list 2>/dev/null | grep -o '"id":"[^"]*"' | cut -d'"' -f4 | sort -u
}
_orch() {
	local cur=${COMP_WORDS[COMP_CWORD]} i cmd=
	local cmds="list show create stop start delete exec cp ls rm apps expose unexpose policy home"
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--url|--key-file|--config) ((i++)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [ -z "$cmd" ]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--url --key-file --config --json --quiet --help" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
		fi
		return 0
	fi
	case $cmd in
	list) COMPREPLY=($(compgen -W "--org --user --state" -- "$cur")) ;;
	create) COMPREPLY=($(compgen -W "--org --user --image --policy --set" -- "$cur")) ;;
	exec) [[ $cur == -* ]] && COMPREPLY=($(compgen -W "-t -w -e -n --" -- "$cur")) ||
	    COMPREPLY=($(compgen -W "$(_orch_sessions)" -- "$cur")) ;;
	cp)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-q -l" -- "$cur"))
		else
			compopt -o nospace 2>/dev/null
			COMPREPLY=($(compgen -f -- "$cur") $(compgen -W "$(_orch_sessions | sed 's/$/:\//')" -- "$cur"))
		fi ;;
	ls|rm) compopt -o nospace 2>/dev/null
	    COMPREPLY=($(compgen -W "-r $(_orch_sessions | sed 's/$/:\//')" -- "$cur")) ;;
	home) COMPREPLY=($(compgen -W "--delete" -- "$cur")) ;;
	expose) COMPREPLY=($(compgen -W "--name $(_orch_sessions)" -- "$cur")) ;;
	show|stop|start|delete|apps|unexpose|policy)
		COMPREPLY=($(compgen -W "$(_orch_sessions)" -- "$cur")) ;;
	esac
	return 0
}
complete -o default -F _orch orch
