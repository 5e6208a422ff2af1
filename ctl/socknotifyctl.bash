# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# bash completion for socknotifyctl(1)
_socknotifyctl()
{
        local cur prev verbs opts
        COMPREPLY=()
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        verbs="status clients ports registrations log-level reload check-config reexec watch metrics monitor"
        opts="--socket --json --color --output --raw --noheadings --no-legend --help --version"
        case $prev in
        -s|--socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
        -o|--output)
                # The columns of the verb's table (socknotifyctl(1)), after the last comma.
                local cols="PID UID USER COMMAND PORTS REGISTRATIONS WAITS QUEUED AGE ID GID TRANSPORT"
                case " ${COMP_WORDS[*]} " in
                *" ports "*|*" watch "*)
                        cols="ID NAME UID USER HANDLES CONCURRENCY RUNNING REGISTRATIONS QUEUED POSTED WAITERS LINGER BLOCKED" ;;
                *" registrations "*)
                        cols="PORT KEY PID KIND LOCAL PEER FILTER TRIGGER STATE QUEUED" ;;
                esac
                local head=${cur%,*}, tail=${cur##*,}
                [ "$head" = "$cur," ] && head=
                COMPREPLY=($(compgen -P "$head" -W "$cols" -- "$tail")); return ;;
        log-level) COMPREPLY=($(compgen -W "error warning notice info debug" -- "$cur")); return ;;
        --format) COMPREPLY=($(compgen -W "openmetrics prometheus" -- "$cur")); return ;;
        esac
        local table="--json --output --raw --noheadings --no-legend"
        local w verb=
        for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
                case " $verbs " in *" $w "*) verb=$w ;; esac
        done
        case $verb in
        "") COMPREPLY=($(compgen -W "$verbs $opts" -- "$cur")) ;;
        registrations) COMPREPLY=($(compgen -W "--port= --client= $table" -- "$cur")) ;;
        watch) COMPREPLY=($(compgen -W "--interval= --count= --output --raw --noheadings --no-legend" -- "$cur")) ;;
        clients|ports) COMPREPLY=($(compgen -W "$table" -- "$cur")) ;;
        monitor) COMPREPLY=($(compgen -W "--client= --port= --json" -- "$cur")) ;;
        metrics) COMPREPLY=($(compgen -W "--format" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -W "--json" -- "$cur")) ;;
        esac
}
complete -F _socknotifyctl socknotifyctl
