# Bash completion for erode(1).  `make install` puts it in
# $(PREFIX)/share/bash-completion/completions/erode; to try it from the
# source tree: `. scripts/completion/erode.bash`.
#
# Nothing here lists erode's options or recipe keys: they are read from the
# binary being completed (`erode --help` and `erode --print-recipe`) the first
# time they are needed and kept for the shell session, so the completion
# cannot go stale when options or keys are added.
#
#   erode --<TAB>                 every long option of --help
#   erode -f <TAB>, --backend     the choices --help shows (tif|png|exr|r16|r32, ...);
#                                 --progress=<TAB> those of --progress[=...]
#   erode --layers height,<TAB>   the layer names --help lists
#   erode -s mei.<TAB>            recipe keys, as KEY=; then KEY=<default>
#   erode -s model=<TAB>          the models --help lists
#   erode --co C<TAB>             the creation options --help lists, as KEY=;
#                                 then their choices (COMPRESS=ZSTD,
#                                 PIXEL_TYPE=HALF, ...)
#   erode --precision <TAB>       layer names, as LAYER=
#   erode -r <TAB>                *.json; --preview: *.png; -o: directories
#   erode <TAB>                   heightmaps: *.tif *.tiff *.png

# _erode_load BIN: fills the _erode_* caches from BIN, once per binary.
_erode_load()
{
    local bin=$1 line opt short meta
    [[ $_erode_cached_bin == "$bin" ]] && return 0
    _erode_cached_bin=$bin
    _erode_opts=() _erode_layers=() _erode_keys=() _erode_models=()
    _erode_meta=() _erode_long=() _erode_default=() _erode_co=()
    # "  -r, --recipe FILE     text" or "      --json     text"
    while IFS= read -r line; do
        # "Models (the recipe's "model", ...): mei, droplet, ..."
        if [[ $line =~ ^Models\ .*:\ ([a-z_0-9,\ ]+)$ ]]; then
            IFS=', ' read -r -a _erode_models <<< "${BASH_REMATCH[1]}"
            continue
        fi
        # "--progress[=a|b]": an optional argument, only as "--progress=a"
        [[ $line =~ ^\ +(-([A-Za-z]),\ )?(--[a-z][a-z0-9-]*)(\[=([^] ]+)\]\ |\ ([^ ]+)\ \ |\ \ |$) ]] || continue
        short=${BASH_REMATCH[2]} opt=${BASH_REMATCH[3]} meta=${BASH_REMATCH[6]}
        _erode_opts+=("$opt")
        [[ -n $short ]] && _erode_long[-$short]=$opt
        _erode_meta[$opt]=$meta
        [[ -n ${BASH_REMATCH[5]} ]] && _erode_meta[$opt=]=${BASH_REMATCH[5]}
        if [[ $opt == --layers && $line =~ list\ of\ ([a-z,]+) ]]; then
            IFS=, read -r -a _erode_layers <<< "${BASH_REMATCH[1]}"
        fi
        # "--co KEY=VALUE  ... COMPRESS=DEFLATE|ZSTD|LZW|NONE, LEVEL=N, ..."
        if [[ $opt == --co ]]; then
            local item rest=${line#*): }
            for item in ${rest//,/ }; do
                [[ $item =~ ^([A-Z_]+)=([A-Za-z0-9_|]+)$ ]] && _erode_co[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
            done
        fi
    done < <("$bin" --help 2> /dev/null)
    # --print-recipe prints one key a line, nested objects indented by two.
    local -a path=()
    local depth name key value p
    while IFS= read -r line; do
        if [[ $line =~ ^(\ *)\"([a-z_0-9]+)\":\ (.*)$ ]]; then
            depth=$(( ${#BASH_REMATCH[1]} / 2 - 1 ))
            name=${BASH_REMATCH[2]} value=${BASH_REMATCH[3]%,}
            path=("${path[@]:0:depth}")
            key=
            for p in "${path[@]}"; do key+=$p.; done
            key+=$name
            if [[ $value == "{" ]]; then
                path+=("$name")
            else
                _erode_keys+=("$key")
                value=${value#\"} value=${value%\"}
                [[ $value == "[]" || $value == null ]] || _erode_default[$key]=$value
            fi
        fi
    done < <("$bin" --print-recipe 2> /dev/null)
}

# _erode_files PATTERN...: files matching a shell pattern, and directories.
_erode_files()
{
    local f
    local -a all
    mapfile -t all < <(compgen -f -- "$cur")
    compopt -o filenames 2> /dev/null
    for f in "${all[@]}"; do
        if [[ -d $f ]]; then COMPREPLY+=("$f"); continue; fi
        local p
        for p in "$@"; do
            # shellcheck disable=SC2053
            [[ ${f,,} == $p ]] && { COMPREPLY+=("$f"); break; }
        done
    done
}

_erode()
{
    # Readline splits "KEY=VALUE" and "--opt=value" at the '=' (it is in
    # COMP_WORDBREAKS): glue the pieces back into words, and complete only
    # the text after the last '=', which is what readline replaces.
    local -a w=()
    local i word
    for ((i = 0; i <= COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if ((i > 1)) && [[ $word == "=" || ${COMP_WORDS[i - 1]} == "=" ]]; then
            w[${#w[@]} - 1]+=$word
        else
            w+=("$word")
        fi
    done
    local cur=${w[${#w[@]} - 1]} prev=
    ((${#w[@]} > 1)) && prev=${w[${#w[@]} - 2]}
    COMPREPLY=()
    local strip=
    [[ $cur == *=* ]] && strip=${cur%=*}=
    if [[ $cur == --*=* ]]; then
        prev=${cur%%=*}= cur=${cur#*=} strip=
    fi
    _erode_complete "$cur" "$prev"
    if [[ -n $strip ]]; then
        COMPREPLY=("${COMPREPLY[@]#"$strip"}")
    fi
    return 0
}

# _erode_complete CUR PREV: fills COMPREPLY for the glued words.
_erode_complete()
{
    local cur=$1 prev=$2
    local bin
    bin=$(type -P -- "${COMP_WORDS[0]}" 2> /dev/null) || bin=
    [[ -z $bin && -x ${COMP_WORDS[0]} ]] && bin=${COMP_WORDS[0]}
    [[ -n $bin ]] && _erode_load "$bin"

    local opt=$prev
    [[ -n ${_erode_long[$prev]:-} ]] && opt=${_erode_long[$prev]}
    # "--opt=": an optional argument's choices, else the option's argument
    [[ $opt == --*= && -z ${_erode_meta[$opt]:-} ]] && opt=${opt%=}
    local meta=${_erode_meta[$opt]:-}
    if [[ $opt == --* && -n $meta ]]; then
        case $opt in
        --set)
            if [[ $cur == *=* ]]; then
                local k=${cur%%=*}
                local d=${_erode_default[$k]:-}
                if [[ $k == model ]]; then
                    mapfile -t COMPREPLY < <(compgen -W "${_erode_models[*]}" -P "$k=" -- "${cur#*=}")
                else
                    [[ -n $d && $k=$d == "$cur"* ]] && COMPREPLY=("$k=$d")
                fi
            else
                compopt -o nospace 2> /dev/null
                mapfile -t COMPREPLY < <(compgen -W "${_erode_keys[*]}" -S = -- "$cur")
            fi
            ;;
        --layers)
            local done_part=
            [[ $cur == *,* ]] && done_part=${cur%,*},
            compopt -o nospace 2> /dev/null
            mapfile -t COMPREPLY < <(compgen -W "${_erode_layers[*]}" -P "$done_part" -- "${cur##*,}")
            ;;
        --co)
            if [[ $cur == *=* ]]; then
                local k=${cur%%=*}
                local c=${_erode_co[${k^^}]:-}
                [[ $c == *\|* ]] && mapfile -t COMPREPLY < <(compgen -W "${c//|/ }" -P "$k=" -- "${cur#*=}")
            else
                compopt -o nospace 2> /dev/null
                mapfile -t COMPREPLY < <(compgen -W "${!_erode_co[*]}" -S = -- "${cur^^}")
            fi
            ;;
        --precision)
            compopt -o nospace 2> /dev/null
            [[ $cur == *=* ]] || mapfile -t COMPREPLY < <(compgen -W "${_erode_layers[*]}" -S = -- "$cur")
            ;;
        --recipe) _erode_files '*.json' ;;
        --inputs-from) _erode_files '*' ;;
        *)
            case $meta in
            *\|*) mapfile -t COMPREPLY < <(compgen -W "${meta//|/ }" -- "$cur") ;;
            *.png) _erode_files '*.png' ;;
            *.json) _erode_files '*.json' ;;
            DIR*) compopt -o filenames 2> /dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
            *FILE*) _erode_files '*' ;;
            esac
            ;;
        esac
        return 0
    fi
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "${_erode_opts[*]} ${!_erode_long[*]}" -- "$cur")
        return 0
    fi
    _erode_files '*.tif' '*.tiff' '*.png'
}

_erode_cached_bin=
_erode_opts=() _erode_layers=() _erode_keys=() _erode_models=()
declare -A _erode_meta=() _erode_long=() _erode_default=() _erode_co=()
complete -F _erode erode
