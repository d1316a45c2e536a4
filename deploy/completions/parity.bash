# bash completion for parity, parity-agent and parity-collector.
#
# Installed as share/bash-completion/completions/parity (with
# parity-agent and parity-collector linked to it). Nothing is listed
# here: the verbs are read from `parity --help` (the table of
# collector/client/common/cl_verbs.h) and a command's options from its own
# --help, so the completion never lags behind the programs.
# COMPREPLY=($(compgen ...)) is bash-completion's own idiom: the words
# are verbs and options, never with spaces.
# shellcheck disable=SC2207

# The --options a command's help names, one per line.
_parity_help_options()
{
    "$@" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u
}

# parity's verbs: the lines under "verbs:" in `parity --help`.
_parity_verbs()
{
    "$1" --help 2>/dev/null |
        sed -n '/^verbs:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p'
}

# A verb's actions, from its usage line "parity VERB a|b|c ARG"
# (`parity hosts approve|reject|revoke`), one per line.
_parity_actions()
{
    "$1" "$2" --help 2>/dev/null |
        sed -n "s/^.*parity $2 \([a-z]*|[a-z|]*\) .*/\1/p" | tr '|' '\n'
}

# Options that take a file or directory; anything else that takes a value
# gets no completion.
_parity_takes_path()
{
    case $1 in
        --export-json|--export-markdown|--export-csv|--out|--key|\
        --collector-key|--suites|--spool|--allow|--admin|--data-dir|--site|\
        --config) return 0 ;;
    esac
    return 1
}

_parity()
{
    local cur prev words cword
    _init_completion || return
    local cmd=${words[0]} verb="" i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --) return ;;              # compare's commands: not ours
            -*) ;;
            *) verb=${words[i]}; break ;;
        esac
    done
    if _parity_takes_path "$prev"; then
        _filedir
        return
    fi
    case ${cmd##*/} in
        parity)
            if [[ -z $verb ]]; then
                if [[ $cur == -* ]]; then
                    COMPREPLY=($(compgen -W '--help --version' -- "$cur"))
                else
                    COMPREPLY=($(compgen -W "$(_parity_verbs "$cmd") help" \
                        -- "$cur"))
                fi
            elif [[ $verb == help ]]; then
                COMPREPLY=($(compgen -W "$(_parity_verbs "$cmd")" -- "$cur"))
            elif [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$(_parity_help_options "$cmd" \
                    "$verb")" -- "$cur"))
            elif [[ $prev == "$verb" ]] &&
                [[ -n $(_parity_actions "$cmd" "$verb") ]]; then
                COMPREPLY=($(compgen -W "$(_parity_actions "$cmd" \
                    "$verb")" -- "$cur"))
            else
                _filedir
            fi
            ;;
        parity-agent)
            if [[ -z $verb && $cur != -* ]]; then
                COMPREPLY=($(compgen -W 'run env' -- "$cur"))
            elif [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$(_parity_help_options "$cmd")" \
                    -- "$cur"))
            else
                _filedir '@(yaml|yml)'
            fi
            ;;
        *)
            if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$(_parity_help_options "$cmd")" \
                    -- "$cur"))
            fi
            ;;
    esac
}
complete -F _parity parity parity-agent parity-collector
