#!/bin/sh
# The command-line contract of erode(1): help, version, usage errors,
# recipe errors, --print-recipe round trip, exit codes, one error line.
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif

t_case "--help lists every option and exits 0"
t_exit 0 "$ERODE" --help
for o in --recipe --set --output-dir --format --layers --threads --backend --json --print-recipe --quiet --progress --help --version --band --max-memory; do
    grep -q -- "$o" "$T/stdout" || t_fail "--help lacks $o"
done
[ -s "$T/stderr" ] && t_fail "--help wrote to stderr"
t_ok

t_case "--version prints the version"
t_exit 0 "$ERODE" --version
grep -q '^erode [0-9]' "$T/stdout" || t_fail "bad version line: $(cat "$T/stdout")"
t_ok

t_case "unknown option: exit 2, one line"
t_exit 2 "$ERODE" --frobnicate "$W"
t_one_error_line '^erode: .*unknown option'
t_ok

t_case "no input: exit 2, one line"
t_exit 2 "$ERODE"
t_one_error_line '^erode: no input'
t_ok

t_case "bad option values: exit 2, one line each"
for args in "-j 0" "-j x" "--format jpg" "--layers height,foo" "--backend cuda" "-s novalue" "--max-memory lots"; do
    # shellcheck disable=SC2086
    t_exit 2 "$ERODE" $args "$W"
    t_one_error_line '^erode: '
done
t_ok

t_case "recipe errors name the file and JSON path"
printf '{"mei": {"dt": "fast"}}' > "$T/r1.json"
t_exit 2 "$ERODE" -r "$T/r1.json" -o "$T" "$W"
t_one_error_line "r1.json: mei.dt"
printf '{"mei": {"stpes": 3}}' > "$T/r2.json"
t_exit 2 "$ERODE" -r "$T/r2.json" -o "$T" "$W"
t_one_error_line "mei.steps"
t_exit 2 "$ERODE" -s mei.dt=-1 -o "$T" "$W"
t_one_error_line "mei.dt"
t_exit 2 "$ERODE" -r "$T/missing.json" "$W"
t_one_error_line "missing.json"
printf '{"erode_recipe": 2}' > "$T/r3.json"
t_exit 2 "$ERODE" -r "$T/r3.json" "$W"
t_one_error_line "erode_recipe"
ls "$T" | grep -q '\.tif$' && t_fail "outputs written despite a recipe error"
t_ok

t_case "--print-recipe output read back prints the same recipe"
t_exit 0 "$ERODE" --print-recipe -s model=droplet -s droplet.inertia=0.1 -s mei.dt=0.0123456789
cp "$T/stdout" "$T/printed.json"
t_exit 0 "$ERODE" --print-recipe -r "$T/printed.json"
cmp -s "$T/stdout" "$T/printed.json" || t_fail "second print differs"
jq -e '.model == "droplet" and .droplet.inertia == 0.1' "$T/printed.json" > /dev/null || t_fail "overrides not in the printed recipe"
t_ok

t_case "every recipe in configs/ is valid"
for r in "$SRCDIR"/configs/*.json; do
    t_exit 0 "$ERODE" --print-recipe -r "$r"
done
t_ok

t_case "--backend vulkan without Vulkan: exit 2, one line"
if "$ERODE" --list-devices > /dev/null 2>&1; then
    t_skip "this binary has a Vulkan device (80-vulkan.sh tests the backend)"
else
    t_exit 2 "$ERODE" --backend vulkan -o "$T" "$W"
    t_one_error_line "vulkan"
    t_ok
fi

t_case "--inputs-from - reads paths from a pipe, after the command line's"
mkdir -p "$T/if"
printf '  %s \n\n%s\n' "$DATA/olinda_dem_f32_utm25s.tif" "$DATA/puget_sound_1k_u16.png" > "$T/list"
t_exit 0 sh -c "\"$ERODE\" -q --json -s mei.steps=0 --inputs-from - -o \"$T/if\" \"$W\" < \"$T/list\""
[ "$(jq -r .input "$T/stdout" | xargs -n1 basename | tr '\n' ' ')" = \
  "whitebox_dem_f32_utm18n.tif olinda_dem_f32_utm25s.tif puget_sound_1k_u16.png " ] || t_fail "inputs: $(jq -r .input "$T/stdout")"
t_exit 2 "$ERODE" --inputs-from "$T/no-such-list" -o "$T/if"
t_one_error_line "no-such-list"
t_ok
