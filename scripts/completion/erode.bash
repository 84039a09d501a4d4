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
#   erode -r R -s stages.<TAB>    the stages of recipe R, as stages.N.; then the
#                                 keys a stage holds (those of its model's
#                                 section); stages.N.model=<TAB>: the models
#   erode stitch --<TAB>          the options erode stitch uses (--help says)
#   erode --co C<TAB>             the creation options --help lists, as KEY=;
#                                 then their choices (COMPRESS=ZSTD,
#                                 PIXEL_TYPE=HALF, ...)
#   erode --precision <TAB>       layer names, as LAYER=
#   erode -r <TAB>                *.json; --preview: *.png; -o: directories
#   erode <TAB>                   heightmaps: *.tif *.tiff *.png

# _erode_help BIN: BIN --help, each wrapped line joined to the line it
# continues (a continuation starts with eight spaces or more).
_erode_help()
{
    local line joined='' have=0
    while IFS= read -r line; do
        if [[ $line =~ ^\ {8} ]] && ((have)); then
            joined+=" ${line#"${line%%[! ]*}"}"
            continue
        fi
        ((have)) && printf '%s\n' "$joined"
        joined=$line have=1
    done < <("$1" --help 2> /dev/null)
    ((have)) && printf '%s\n' "$joined"
}

# _erode_recipe_keys: the keys of the --print-recipe text on stdin (one key
# a line, nested objects indented by two), "KEY<TAB>VALUE" a line.
_erode_recipe_keys()
{
    local -a path=()
    local line depth name key value p
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
                printf '%s\t%s\n' "$key" "$value"
            fi
        fi
    done
}

# _erode_load BIN: fills the _erode_* caches from BIN, once per binary.
_erode_load()
{
    local bin=$1 line opt short meta
    [[ $_erode_cached_bin == "$bin" ]] && return 0
    _erode_cached_bin=$bin
    _erode_opts=() _erode_layers=() _erode_keys=() _erode_models=() _erode_stitch=()
    _erode_meta=() _erode_long=() _erode_default=() _erode_co=() _erode_sections=()
    # "  -r, --recipe FILE     text" or "      --json     text"
    while IFS= read -r line; do
        # "Models (the recipe's "model", ...): mei, droplet, ..."
        if [[ $line =~ ^Models\ .*:\ ([a-z_0-9,\ ]+)$ ]]; then
            IFS=', ' read -r -a _erode_models <<< "${BASH_REMATCH[1]}"
            continue
        fi
        # "Stitch options: --tile-set, -o, ... (erode stitch ignores the others)."
        if [[ $line =~ ^Stitch\ options:\ ([-A-Za-z,\ ]+)\ \( ]]; then
            IFS=', ' read -r -a _erode_stitch <<< "${BASH_REMATCH[1]}"
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
        # "--co KEY=VALUE  ... COMPRESS=DEFLATE|ZSTD|LZW|NONE, LEVEL=N, ...; COMPRESS=ZIP|..."
        if [[ $opt == --co ]]; then
            local item rest=${line#*): }
            for item in ${rest//,/ }; do
                [[ $item =~ ^([A-Z_]+)=([A-Za-z0-9_|]+)$ ]] || continue
                # a key of two formats (COMPRESS: GeoTIFF's and EXR's codecs): both lists, each name once
                local key=${BASH_REMATCH[1]} name names=${_erode_co[${BASH_REMATCH[1]}]:-}
                for name in ${BASH_REMATCH[2]//|/ }; do
                    [[ "|$names|" == *"|$name|"* ]] || names+=${names:+|}$name
                done
                _erode_co[$key]=$names
            done
        fi
    done < <(_erode_help "$bin")
    local key value
    while IFS=$'\t' read -r key value; do
        _erode_keys+=("$key")
        value=${value#\"} value=${value%\"}
        [[ $value == "[]" || $value == null ]] || _erode_default[$key]=$value
    done < <("$bin" --print-recipe 2> /dev/null | _erode_recipe_keys)
}

# _erode_section BIN MODEL: the keys of MODEL's section ("mei.steps" ...),
# space-separated, read once from BIN -s model=MODEL --print-recipe.
_erode_section()
{
    local key value
    if [[ -z ${_erode_sections[$2]+set} ]]; then
        _erode_sections[$2]=
        while IFS=$'\t' read -r key value; do
            [[ $key == "$2".* ]] && _erode_sections[$2]+="$key "
        done < <("$1" -s "model=$2" --print-recipe 2> /dev/null | _erode_recipe_keys)
    fi
    printf '%s' "${_erode_sections[$2]}"
}

# _erode_stage_models BIN: the model of each stage of the recipe the
# command line gives with -r (none without one), a -s stages.N.model=
# before the cursor replacing stage N's; one a line.
_erode_stage_models()
{
    local i line recipe=
    local -a models=()
    for ((i = 1; i < ${#w[@]} - 1; i++)); do
        case ${w[i]} in
        -r | --recipe) recipe=${w[i + 1]} ;;
        --recipe=*) recipe=${w[i]#--recipe=} ;;
        esac
    done
    [[ -n $recipe && -r $recipe ]] || return 0
    # a stage's keys are indented by six: "      "model": "mei","
    while IFS= read -r line; do
        [[ $line =~ ^\ {6}\"model\":\ \"([a-z_0-9]+)\" ]] && models+=("${BASH_REMATCH[1]}")
    done < <("$1" -r "$recipe" --print-recipe 2> /dev/null)
    for ((i = 1; i < ${#w[@]} - 1; i++)); do
        [[ ${w[i]} =~ ^stages\.(0|[1-9][0-9]*)\.model=([a-z_0-9]+)$ ]] &&
            ((BASH_REMATCH[1] < ${#models[@]})) && models[BASH_REMATCH[1]]=${BASH_REMATCH[2]}
    done
    ((${#models[@]})) && printf '%s\n' "${models[@]}"
}

# _erode_stage_keys BIN CUR: completes -s CUR, a key of a stage
# ("stages.", "stages.1.me", "stages.1.model=").
_erode_stage_keys()
{
    local -a models
    mapfile -t models < <(_erode_stage_models "$1")
    if [[ $2 =~ ^stages\.(0|[1-9][0-9]*)\.(.*)$ ]]; then
        local n=${BASH_REMATCH[1]} rest=${BASH_REMATCH[2]} k top=()
        ((n < ${#models[@]})) || return 0
        if [[ $rest == model=* ]]; then
            mapfile -t COMPREPLY < <(compgen -W "${_erode_models[*]}" -P "stages.$n.model=" -- "${rest#model=}")
            return 0
        fi
        [[ $rest == *=* ]] && return 0
        # what a stage holds: the top level's keys but the version and the
        # terrain, and its own model's section
        for k in "${_erode_keys[@]}"; do
            [[ $k == *.* || $k == erode_recipe ]] || top+=("$k")
        done
        compopt -o nospace 2> /dev/null
        mapfile -t COMPREPLY < <(compgen -W "${top[*]} $(_erode_section "$1" "${models[n]}")" \
            -P "stages.$n." -S = -- "$rest")
        return 0
    fi
    local i all=()
    for ((i = 0; i < ${#models[@]}; i++)); do all+=("stages.$i."); done
    compopt -o nospace 2> /dev/null
    mapfile -t COMPREPLY < <(compgen -W "${all[*]}" -- "$2")
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
            if [[ $cur == stages.* ]]; then
                _erode_stage_keys "$bin" "$cur"
            elif [[ $cur == *=* ]]; then
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
                [[ stages. == "$cur"* && -n $(_erode_stage_models "$bin") ]] && COMPREPLY+=(stages.)
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
        local offer="${_erode_opts[*]} ${!_erode_long[*]}" o
        if [[ ${w[1]:-} == stitch ]]; then
            offer=
            for o in "${_erode_stitch[@]}"; do offer+=" $o ${_erode_long[$o]:-}"; done
        fi
        mapfile -t COMPREPLY < <(compgen -W "$offer" -- "$cur")
        return 0
    fi
    _erode_files '*.tif' '*.tiff' '*.png'
}

_erode_cached_bin=
_erode_opts=() _erode_layers=() _erode_keys=() _erode_models=() _erode_stitch=()
declare -A _erode_meta=() _erode_long=() _erode_default=() _erode_co=() _erode_sections=()
complete -F _erode erode
