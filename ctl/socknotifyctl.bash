# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# bash completion for socknotifyctl(1)
_socknotifyctl()
{
        local cur prev verbs opts
        COMPREPLY=()
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        verbs="status clients ports registrations log-level reload reexec watch monitor"
        opts="--socket --json --color --help --version"
        case $prev in
        -s|--socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
        log-level) COMPREPLY=($(compgen -W "error warning notice info debug" -- "$cur")); return ;;
        esac
        local w verb=
        for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
                case " $verbs " in *" $w "*) verb=$w ;; esac
        done
        case $verb in
        "") COMPREPLY=($(compgen -W "$verbs $opts" -- "$cur")) ;;
        registrations) COMPREPLY=($(compgen -W "--port= --client= --json" -- "$cur")) ;;
        watch) COMPREPLY=($(compgen -W "--interval= --count=" -- "$cur")) ;;
        monitor) COMPREPLY=($(compgen -W "--client= --port= --json" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -W "--json" -- "$cur")) ;;
        esac
}
complete -F _socknotifyctl socknotifyctl
