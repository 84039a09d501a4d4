#!/bin/sh
# Documentation checks (jq's tests/mantest in spirit):
#  1. mandoc -Tlint finds nothing in man/*.1 and man/*.5;
#  2. `erode --help` and man/erode.1 list the same long options;
#  3. the EXAMPLES of erode.1 run and succeed;
#  4. every key of `erode --print-recipe` has an entry in erode-recipe.5, in
#     the section of its object (TOP LEVEL, TERRAIN, MEI, DROPLET,
#     droplet.mass_transfer), stating a default and a range or choices.
erode=$(cd "$(dirname "${1:-./erode}")" && pwd)/$(basename "${1:-./erode}")
src=$(cd "$(dirname "$0")/.." && pwd)
status=0
for m in "$src"/man/*.[15]; do
    [ -f "$m" ] || continue
    out=$(mandoc -Tlint -W warning "$m" 2>&1) || { echo "lint: $m"; echo "$out"; status=1; }
done

help_opts=$("$erode" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
man_opts=$(grep -o -- '^\.It Fl .*' "$src/man/erode.1" | grep -o -- 'Fl -[a-z][a-z-]*' | sed 's/^Fl /-/' | sort -u)
if [ "$help_opts" != "$man_opts" ]; then
    echo "lint: --help and man/erode.1 OPTIONS differ:"
    printf '%s\n' "$help_opts" > /tmp/erode-lint-help.$$
    printf '%s\n' "$man_opts" | diff /tmp/erode-lint-help.$$ - | sed 's/^/  /'
    rm -f /tmp/erode-lint-help.$$
    status=1
fi

# 4. Recipe keys: ".It Ic KEY" (or ".It Ic x , Ic y") in the key's section,
# and the entry (up to the next ".It" of that list) names a default.
if command -v jq > /dev/null 2>&1; then
    keys=$("$erode" --print-recipe | jq -r 'paths(type != "object") | map(tostring) | join(".")')
    nkeys=0
    for k in $keys; do
        nkeys=$((nkeys + 1))
        case $k in
        droplet.mass_transfer.*) sec='^\.Ss droplet\.mass_transfer' ;;
        terrain.*) sec='^\.Sh TERRAIN' ;;
        mei.*) sec='^\.Sh MEI' ;;
        droplet.*) sec='^\.Sh DROPLET' ;;
        *) sec='^\.Sh TOP LEVEL' ;;
        esac
        name=${k##*.}
        entry=$(awk -v sec="$sec" -v name="$name" '
            $0 ~ sec { in_sec = 1; next }
            in_sec && /^\.S[hs] / { exit }
            in_sec && /^\.It Ic / {
                if (found) exit
                n = split($0, w, " ")
                for (i = 3; i <= n; i++) if (w[i] == name && w[i - 1] == "Ic") found = 1
            }
            found { print }' "$src/man/erode-recipe.5")
        if [ -z "$entry" ]; then
            echo "lint: recipe key $k has no entry in man/erode-recipe.5"
            status=1
        elif ! printf '%s\n' "$entry" | grep -q 'Default'; then
            echo "lint: man/erode-recipe.5: $k states no default"
            status=1
        fi
    done
    [ "$nkeys" -ge 40 ] || { echo "lint: only $nkeys recipe keys from --print-recipe"; status=1; }
else
    echo "lint: jq missing, recipe keys not checked against erode-recipe.5"
fi

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
[ $status -eq 0 ] && echo "lint: man pages clean, --help matches erode.1, $n examples ran, every recipe key in erode-recipe.5"
exit $status
