#!/bin/sh
# Documentation checks (jq's tests/mantest in spirit):
#  1. mandoc -Tlint and groff -ww (what man(1) formats with) find nothing
#     in man/*.1, man/*.5 and man/*.7;
#  2. `erode --help` and man/erode.1 list the same long options;
#  3. the EXAMPLES of erode.1 run and succeed;
#  4. every key of the key table (core/keys.c, printed by the test program
#     keys-dump, the second argument) has an entry in erode-recipe.5, in the
#     section of its object (TOP LEVEL, TERRAIN, MEI, DROPLET,
#     droplet.mass_transfer, SPH, STREAM POWER), stating the table's type, default and range
#     or choices; every key of `erode --print-recipe` is in the table;
#  5. README.md stays a landing page: at most 300 lines; its links and
#     CONTRIBUTING.md's lead to files and sections that exist;
#  6. README.md, CONTRIBUTING.md, man/ and core/ describe things as they
#     are: no ISO dates
#     and no development history (who measured what, when and beside which
#     work; "round N"); a figure names its commit and month instead;
#  7. the benchmark figures of erode-models.7 and README.md are what their
#     records in man/bench/ say (scripts/bench-doc --check);
#  8. comments in the code name no path under ../shared, no repository
#     path that does not exist and no Markdown file (DESIGN.md) that is
#     not in the repository;
#  and the code's boundaries: each model's name written once, no model's
#  internals included outside it, no model named by core/backend.h,
#  core/vulkan/ or cli/; no call cycle between the files of cli/, core/
#  and io/ (the objects' symbols, nm), except through the registry.
erode=$(cd "$(dirname "${1:-./erode}")" && pwd)/$(basename "${1:-./erode}")
src=$(cd "$(dirname "$0")/.." && pwd)
status=0
for m in "$src"/man/*.[157]; do
    [ -f "$m" ] || continue
    out=$(mandoc -Tlint -W warning "$m" 2>&1) || { echo "lint: $m"; echo "$out"; status=1; }
done
# man(1) on Debian formats with groff, which (unlike mandoc) cannot break
# a table row or a word wider than its 78 columns; it exits 0 on warnings,
# so any message fails.
if command -v groff > /dev/null 2>&1; then
    for m in "$src"/man/*.[157]; do
        [ -f "$m" ] || continue
        out=$(groff -man -Tutf8 -ww -z "$m" 2>&1)
        [ -z "$out" ] || { echo "lint: groff: $m"; echo "$out"; status=1; }
    done
else
    echo "lint: skipped the groff check of the man pages: groff is not installed (apt-get install groff-base)"
fi

help_opts=$("$erode" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
man_opts=$(grep -o -- '^\.It Fl .*' "$src/man/erode.1" | grep -o -- 'Fl -[a-z][a-z-]*' | sed 's/^Fl /-/' | sort -u)
if [ "$help_opts" != "$man_opts" ]; then
    echo "lint: --help and man/erode.1 OPTIONS differ:"
    printf '%s\n' "$help_opts" > /tmp/erode-lint-help.$$
    printf '%s\n' "$man_opts" | diff /tmp/erode-lint-help.$$ - | sed 's/^/  /'
    rm -f /tmp/erode-lint-help.$$
    status=1
fi

# 4. Recipe keys against the key table of core/keys.c, as printed by
# keys-dump (path, type, default, range or choices; tab-separated).  Each
# key has an entry ".It Ic NAME" (or ".It Ic x , Ic y") in the section of
# its object (a source field's in MEI) that states, in this form:
#   .It Ic NAME Pq TYPE[, unit][, required]    the table's type
#   Default VALUE[ (why)], range [LO, HI].     or "No default, range ..."
#   one of: .Bl .It Qq NAME ... .El            a string's choices, in order
#   at most N                                  the length of river_sources
# Numbers compare as numbers (1e6 = 1000000); a string default is
# ".Qq NAME", the empty list ".Ql []".
dump=$2
tmpd=$(mktemp "${TMPDIR:-/tmp}/erode-lint-keys-XXXXXX")
if [ -z "$dump" ] || ! "$dump" > "$tmpd"; then
    echo "lint: no key table: usage: lint.sh ERODE KEYS-DUMP (make lint passes both)"
    status=1
fi
nkeys=0
tab=$(printf '\t')
while IFS="$tab" read -r k ktype kdef krange; do
    nkeys=$((nkeys + 1))
    case $k in
    droplet.mass_transfer.*) sec='^\.Ss droplet\.mass_transfer' ;;
    terrain.*) sec='^\.Sh TERRAIN' ;;
    mei.*) sec='^\.Sh MEI' ;;
    droplet.*) sec='^\.Sh DROPLET' ;;
    sph.*) sec='^\.Sh SPH' ;;
    stream_power.*) sec='^\.Sh STREAM POWER' ;;
    *) sec='^\.Sh TOP LEVEL' ;;
    esac
    name=${k##*.}
    out=$(awk -v sec="$sec" -v name="$name" -v key="$k" -v type="$ktype" -v def="$kdef" \
        -v range="$krange" '
        function num(s) { return s ~ /^-?[0-9]+(\.[0-9]*)?(e[-+]?[0-9]+)?$/ }
        # "(0, 1]" -> lb, lo, hi, rb; 0 when it is no interval of two numbers
        function interval(s, iv,   w) {
            if (split(substr(s, 2, length(s) - 2), w, ", ") != 2 || !num(w[1]) || !num(w[2]))
                return 0
            iv["lb"] = substr(s, 1, 1); iv["rb"] = substr(s, length(s), 1)
            iv["lo"] = w[1]; iv["hi"] = w[2]
            return 1
        }
        function bad(what) { print "lint: man/erode-recipe.5: " key ": " what; status = 1 }
        $0 ~ sec { in_sec = 1; next }
        in_sec && /^\.S[hs] / { exit }
        in_sec && /^\.It Ic / {
            if (found) exit
            n = split($0, w, " ")
            for (i = 3; i <= n; i++) if (w[i] == name && w[i - 1] == "Ic") found = 1
            if (found) { p = index($0, " Pq "); mtype = p ? substr($0, p + 4) : ""; next }
        }
        !found { next }
        /^\.It Qq / { choices = choices (choices == "" ? "" : ", ") "\047" $3 "\047"; next }
        /^\.Qq / {
            n = split($0, w, " "); line = "\"" w[2] "\""
            for (i = 3; i <= n; i++) line = line " " w[i]
            text = text " " line; next
        }
        /^\.Ql / { sub(/^\.Ql /, ""); text = text " " $0; next }
        { text = text " " $0 }
        END {
            if (!found) { print "lint: recipe key " key " has no entry in man/erode-recipe.5"; exit 1 }
            split(type, tw, /[ ,]/)
            if (mtype !~ "^" tw[1] "([ ,]|$)")
                bad("type \"" mtype "\", the table says " type)
            if ((mtype ~ /null/) != (type ~ /null/) || (mtype ~ /relief/) != (type ~ /relief/) ||
                (mtype ~ /auto/) != (type ~ /auto/) ||
                (mtype ~ /required/) != (type ~ /required/))
                bad("type \"" mtype "\", the table says " type)
            if (text ~ /No default/) mdef = "-"
            else if (match(text, /Default [^ ,;(]+/)) mdef = substr(text, RSTART + 8, RLENGTH - 8)
            else mdef = ""
            if (mdef == "") bad("states no default (the table says " def ")")
            else if (num(def) ? !num(mdef) || mdef + 0 != def + 0 : mdef != def)
                bad("default " mdef ", the table says " def)
            if (tw[1] == "string") {
                if (choices != range) bad("choices " choices ", the table says " range)
            } else if (tw[1] == "array") {
                interval(range, iv)
                if (text !~ "at most " iv["hi"] "[^0-9]") bad("does not say at most " iv["hi"])
            } else if (type != "integer" || range ~ /^[[(]/) {
                if (!match(text, /range [[(][^])]*[])]/)) { bad("states no range (the table says " range ")"); exit status }
                mr = substr(text, RSTART + 6, RLENGTH - 6)
                if (!interval(mr, m) || !interval(range, t) || m["lb"] != t["lb"] || m["rb"] != t["rb"] ||
                    m["lo"] + 0 != t["lo"] + 0 || m["hi"] + 0 != t["hi"] + 0)
                    bad("range " mr ", the table says " range)
            }
            exit status
        }' "$src/man/erode-recipe.5")
    if [ -n "$out" ]; then
        printf '%s\n' "$out"
        status=1
    fi
done < "$tmpd"
[ "$nkeys" -ge 40 ] || { echo "lint: only $nkeys recipe keys from $dump"; status=1; }

# Every key --print-recipe writes is a key of the table.
if command -v jq > /dev/null 2>&1; then
    for k in $("$erode" --print-recipe | jq -r 'paths(type != "object") | map(tostring) | join(".")'); do
        grep -q "^$k$tab" "$tmpd" || { echo "lint: --print-recipe writes $k, keys-dump lacks it"; status=1; }
    done
else
    echo "lint: jq missing, --print-recipe not checked against the key table"
fi
rm -f "$tmpd"

# Run each ".Dl $ command" of EXAMPLES in a scratch directory that has the
# source tree's tests/ and a small tile set.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/erode-mantest-XXXXXX")
ln -s "$src/tests" "$tmp/tests"
ln -s "$src/configs" "$tmp/configs"
mkdir -p "$tmp/tiles" "$tmp/bin"
cp "$src/tests/data/olinda_dem_f32_utm25s.tif" "$tmp/tiles/a.tif"
ln -s "$erode" "$tmp/bin/erode"
n=0
sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$src/man/erode.1" | sed -n 's/^\.Dl \$ //p' > "$tmp/examples"
while IFS= read -r cmd; do
    n=$((n + 1))
    cmd=$(printf '%s' "$cmd" | sed 's/\\-/-/g; s/\\(aq/'"'"'/g')
    if ! (cd "$tmp" && PATH="$tmp/bin:$PATH" sh -c "$cmd" > /dev/null 2> "$tmp/err"); then
        echo "lint: man example failed: $cmd: $(head -c 300 "$tmp/err")"
        status=1
    fi
done < "$tmp/examples"
[ "$n" -ge 3 ] || { echo "lint: only $n examples found in erode.1"; status=1; }
rm -rf "$tmp"
# The models are the lines of the model list (core/models.def).  A model's
# name is written once in the sources, in its ops (core/models.h):
# everything else (the key table, --json, messages, checkpoints) asks the
# registry for it.
models=$(sed -n 's/^ER_MODEL([A-Z_0-9]*, *\([a-z_0-9]*\))$/\1/p' "$src/core/models.def")
[ "$(printf '%s\n' $models | wc -l)" -ge 3 ] || { echo "lint: fewer than 3 models in core/models.def"; status=1; }
for m in $models; do
    [ -d "$src/core/$m" ] || { echo "lint: core/models.def names $m, which has no directory core/$m/"; status=1; }
    k=$(grep -rF "\"$m\"" "$src/cli" "$src/io" "$src/core" --include='*.c' --include='*.h' | wc -l)
    if [ "$k" -ne 1 ]; then
        echo "lint: the model name \"$m\" is written $k times in cli/, io/, core/ (once: its ops):"
        grep -rnF "\"$m\"" "$src/cli" "$src/io" "$src/core" --include='*.c' --include='*.h' | head -5
        status=1
    fi
done
for d in "$src"/core/*/; do
    d=$(basename "$d")
    [ "$d" = vulkan ] || printf '%s\n' $models | grep -qx "$d" ||
        { echo "lint: core/$d/ is no model of core/models.def"; status=1; }
done
# The shared files (core/ outside the models' directories, core/vulkan/,
# cli/, io/) name no model in their code (comments aside): no model's kind,
# function, type, member or shader, and include no file of its directory.  A model's facts come from its directory through
# the registry.
shared=$(ls "$src"/core/*.[ch] "$src"/core/vulkan/*.[ch] "$src"/cli/*.[ch] "$src"/io/*.[ch])
# each file's code without its comments, once (not once a model)
pp=$(mktemp -d "${TMPDIR:-/tmp}/erode-lint-pp-XXXXXX")
i=0
for f in $shared; do
    i=$((i + 1))
    gcc -fpreprocessed -dD -E -P "$f" > "$pp/$i" 2>/dev/null
done
for m in $models; do
    M=$(printf '%s' "$m" | tr 'a-z' 'A-Z')
    i=0
    for f in $shared; do
        i=$((i + 1))
        hits=$(grep -nE "\<(er|ER)_(vk_|VK_|model_|MODEL_)?($m|$M)(_|\>)|\"$m\"|(\.|->)$m\>|\<${m}_[a-z_]*\.(comp|glsl)|#include \"[^\"]*\<$m/" \
               "$pp/$i" || true)
        [ -z "$hits" ] && continue
        echo "lint: ${f#"$src"/} names the model $m (a shared file asks the registry):"
        echo "$hits" | head -3
        status=1
    done
done
rm -rf "$pp"
# No file includes another model's internals: a model's directory is its
# own, and the Vulkan backend and the other models reach a model only
# through its narrow host header (core/<model>/host.h and the like).
for d in "$src"/core/*/; do
    d=${d%/}; mdl=$(basename "$d")
    grep -q '^ *\.name = "' "$d"/*.c 2>/dev/null || continue
    bad=$(grep -rnE "#include \"(\.\./)*($mdl/)?[a-z_]*(_internal|_impl)\.h\"" "$src/core" "$src/cli" "$src/io" \
          --include='*.c' --include='*.h' | grep -v "^$d/" | grep -E "$mdl/[a-z_]*(_internal|_impl)\.h" || true)
    if [ -n "$bad" ]; then
        echo "lint: outside core/$mdl, a file includes its internals:"
        echo "$bad" | head -5
        status=1
    fi
done

# No call cycle between files: from each object's symbols (nm: the
# functions and data it defines and those it uses from another file), a
# graph of files; dropping, again and again, each file that uses none of
# the files left or that none of them uses leaves the files on cycles
# (and any path between two).  The one loop allowed is the registry's
# (core/models.c names each model's ops, which use shared code that asks
# the registry): edges into core/models are left out.
objdir=${3:-build}
objs=$(cd "$objdir" 2>/dev/null && ls cli/*.o core/*.o core/*/*.o io/*.o 2>/dev/null |
       while read -r o; do [ -f "$src/${o%.o}.c" ] && echo "$o"; done)
if [ -z "$objs" ]; then
    echo "lint: no objects under $objdir to check the call graph of"
    status=1
else
    # shellcheck disable=SC2086
    cyc=$(cd "$objdir" && nm -A $objs | sed 's|^\([^:]*\)\.o:|\1 |' | awk '
        NF == 4 && $3 ~ /^[TDBR]$/ { def[$4] = $1 }
        NF == 3 && $2 == "U" { use[$1, $3] = 1; files[$1] = 1 }
        END {
            for (k in use) {
                split(k, p, SUBSEP); f = def[p[2]]
                if (f != "" && f != p[1] && f != "core/models" && !((p[1], f) in edge)) {
                    edge[p[1], f] = 1; out[p[1]]++; inn[f]++
                    into[f] = into[f] " " p[1]; from[p[1]] = from[p[1]] " " f
                }
            }
            do {
                changed = 0
                for (f in files) {
                    if (gone[f] || (out[f] > 0 && inn[f] > 0))
                        continue
                    gone[f] = 1; changed = 1
                    n = split(into[f], q, " ")
                    for (i = 1; i <= n; i++) out[q[i]]--
                    n = split(from[f], q, " ")
                    for (i = 1; i <= n; i++) inn[q[i]]--
                }
            } while (changed)
            for (f in files) if (!gone[f]) print f
        }' | sort)
    if [ -n "$cyc" ]; then
        echo "lint: these files call each other in a cycle:"
        printf '%s\n' "$cyc" | sed 's/^/  /'
        status=1
    fi
fi

# 5. The README's budget, and the links of README.md and CONTRIBUTING.md.
readme=$src/README.md
n_readme=$(wc -l < "$readme")
if [ "$n_readme" -gt 300 ]; then
    echo "lint: README.md has $n_readme lines, the budget is 300 (reference goes to man/, contributor matters to CONTRIBUTING.md)"
    status=1
fi
# GitHub's anchors of a Markdown file's headings: lower case, punctuation
# dropped, spaces to -.
anchors_of() {
    sed -n 's/^#\{1,6\} //p' "$1" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}
# Every relative link and <img src> of each file leads to a file that
# exists; an anchor (#section) to a heading of the file it names (of the
# linking file itself when it names none), which must be one of these.
for doc in README.md CONTRIBUTING.md; do
    [ -f "$src/$doc" ] || { echo "lint: $doc is missing"; status=1; continue; }
    links=$(grep -o -e '\](\([^)]*\))' -e '<img src="[^"]*"' "$src/$doc" | sed 's/^\](//; s/)$//; s/^<img src="//; s/"$//')
    for l in $links; do
        case $l in
        http://* | https://* | mailto:*) continue ;;
        esac
        file=${l%%#*}
        anchor=
        case $l in *'#'*) anchor=${l#*#} ;; esac
        if [ -n "$file" ] && [ ! -e "$src/$file" ]; then
            echo "lint: $doc links to $l, which does not exist"
            status=1
            continue
        fi
        [ -n "$anchor" ] || continue
        target=${file:-$doc}
        case $target in
        README.md | CONTRIBUTING.md) ;;
        *) echo "lint: $doc links to $l, a section of a file whose anchors are not checked"; status=1; continue ;;
        esac
        if ! anchors_of "$src/$target" | grep -qx -- "$anchor"; then
            echo "lint: $doc links to $l, a section that does not exist"
            status=1
        fi
    done
done

# 6. No dates or development history in README.md, CONTRIBUTING.md, man/
# and core/: history lives in git.  A benchmark figure names its commit and
# month.
history='[0-9]{4}-[0-9]{2}-[0-9]{2}|\b[Rr]ound ([0-9]+|one|two|three|four|five|six|seven|eight|nine|ten)\b'
history="$history"'|\b[Mm]easured (on|at) ((Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day|(January|February|March|April|May|June|July|August|September|October|November|December) [0-9]|the [0-9]+(st|nd|rd|th))'
history="$history"'|\b[0-9]{1,2}:[0-9]{2}(-[0-9]{1,2}:[0-9]{2})? UTC\b|\bA/B\b|\b(main|base) at [0-9a-f]{7,}\b'
history="$history"'|\bbranch `?[a-z0-9_]+-[a-z0-9_-]+|\b[Ii]ssue #[0-9]+'
hist=$(cd "$src" && { grep -nE -e "$history" README.md CONTRIBUTING.md man/*.[157] 2>/dev/null
    find core -name '*.[ch]' -o -name '*.glsl' -o -name '*.comp' | sort | xargs grep -nE -e "$history"; })
if [ -n "$hist" ]; then
    echo "lint: dates or development history (they belong in git; a figure names its commit and month):"
    printf '%s\n' "$hist" | sed 's/^/  /' | cut -c1-160
    status=1
fi

# 7. Benchmark figures from their records.
if ! out=$(python3 "$src/scripts/bench-doc" --check 2>&1); then
    echo "lint: $out"
    status=1
fi

# 8. Comments point only into this repository: none names a path under
# ../shared (a checkout's neighbour, not part of it), every path they
# give from a top-level directory (core/mei/pipe.c, tests/data/...) exists,
# and so does every Markdown file they name (README.md at the top,
# tests/data/ATTRIBUTION.md): a design note kept outside the repository is
# no reference (state the decision, or point at CONTRIBUTING.md or man/).
# Globs and placeholders (io/recipe_*.c, configs/NAME.json) and another
# project's paths ("jq's tests/mantest") are left alone, and so is this
# file, which names what it looks for.
comment_paths() {
    awk '
    FNR == 1 { c = 0; hash = FILENAME !~ /\.(c|h|glsl|comp)$/ }
    {
        t = ""; l = $0
        if (hash) {
            if (FNR == 1 && l ~ /^#!/) next
            if (match(l, /(^|[ \t])#/)) t = substr(l, RSTART)
        } else {
            while (l != "") {
                if (c) {
                    e = index(l, "*/")
                    if (!e) { t = t " " l; break }
                    t = t " " substr(l, 1, e - 1); l = substr(l, e + 2); c = 0
                } else if (match(l, /\/\*|\/\//)) {
                    if (substr(l, RSTART, 2) == "//") { t = t " " substr(l, RSTART + 2); break }
                    l = substr(l, RSTART + 2); c = 1
                } else break
            }
        }
        if (t == "") next
        if (t ~ /\.\.\/shared/) print FILENAME ":" FNR ": ../shared"
        m = t
        while (match(m, /(^|[^A-Za-z0-9_.\/-])([A-Za-z0-9_-]+\/)*[A-Za-z0-9_-]+\.md([^A-Za-z0-9_]|$)/)) {
            before = substr(m, 1, RSTART); p = substr(m, RSTART, RLENGTH)
            m = substr(m, RSTART + RLENGTH)
            sub(/^[^A-Za-z0-9_]/, "", p); sub(/[^A-Za-z0-9_]$/, "", p)
            if (before ~ /'"'"'s .?$/ || p ~ /^(cli|core|io|tests|scripts|man|configs)\//) continue
            print FILENAME ":" FNR ": " p
        }
        while (match(t, /(^|[^A-Za-z0-9_.\/-])(cli|core|io|tests|scripts|man|configs)\/[A-Za-z0-9_.\/-]*/)) {
            before = substr(t, 1, RSTART); p = substr(t, RSTART, RLENGTH)
            sub(/^[^a-z]/, "", p); t = substr(t, RSTART + RLENGTH)
            sub(/[.,:;]+$/, "", p)
            if (t ~ /^[*<]/ || p ~ /\/[A-Z][A-Z]+(\.|\/|$)/ || before ~ /'"'"'s .?$/) continue
            print FILENAME ":" FNR ": " p
        }
    }' "$@"
}
bad_refs=$(cd "$src" && comment_paths $(find cli core io tests scripts .ci Makefile -type f \
        \( -name '*.[ch]' -o -name '*.sh' -o -name '*.py' -o -name '*.glsl' -o -name '*.comp' \
        -o -name Makefile -o -path 'scripts/*' -o -path '.ci/*' \) ! -path 'tests/data/*' ! -path tests/lint.sh | sort) |
    while IFS= read -r hit; do
        p=${hit##*: }
        [ "$p" != ../shared ] && [ -e "$p" ] && continue
        echo "$hit"
    done)
if [ -n "$bad_refs" ]; then
    echo "lint: comments name a path outside this repository or one that does not exist:"
    printf '%s\n' "$bad_refs" | sed 's/^/  /'
    status=1
fi

[ $status -eq 0 ] && echo "lint: README within its budget, its and CONTRIBUTING's links resolve, no dates or history in README, CONTRIBUTING, man/, core/; man pages clean, --help matches erode.1, $n examples ran, every recipe key in erode-recipe.5 as in the key table, each model of core/models.def written once and named in no shared file, no model's internals included outside it, no call cycle between files, benchmark figures as recorded, comments point into the repository"
exit $status
