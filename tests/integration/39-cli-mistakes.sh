#!/bin/sh
# Small mistakes a user meets on the command line (issue 38): each is one
# error line and exit status 2 before any work, or said in --help and
# --version: two recipes, options that would be ignored, numbers and stage
# indices JSON does not write, a stage's model changed under its keys,
# missing directories (erode creates none), the name of an eroded output
# eroded again, --help's width and exit statuses, --version's commit and
# features, and what `make install` installs.
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
stem=whitebox_dem_f32_utm18n

t_case "-r twice: exit 2, one line (recipes are not merged)"
printf '{}' > "$T/a.json"; printf '{}' > "$T/b.json"
t_exit 2 "$ERODE" -r "$T/a.json" -r "$T/b.json" --print-recipe
t_one_error_line "^erode: --recipe: '.*b.json': a second recipe"
t_ok

t_case "--frame-every without --frames, --device on the cpu backend: exit 2, one line"
mkdir -p "$T/o"
t_exit 2 "$ERODE" --frame-every 5 -o "$T/o" "$W"
t_one_error_line "^erode: --frame-every: needs --frames DIR$"
t_exit 2 "$ERODE" --device 0 -o "$T/o" "$W"
t_one_error_line "^erode: --device: needs --backend vulkan or auto"
t_exit 2 "$ERODE" --device 0 --backend cpu -o "$T/o" "$W"
t_one_error_line "^erode: --device: needs --backend vulkan or auto"
t_exit 0 "$ERODE" --device 0 --backend auto --print-recipe
t_empty_dir "$T/o"
t_ok

t_case "JSON numbers with leading zeros and stage indices with them: exit 2, one line"
printf '{"mei": {"steps": 020}}' > "$T/zero.json"
t_exit 2 "$ERODE" -r "$T/zero.json" -o "$T/o" "$W"
t_one_error_line "zero.json: line 1, column 19: malformed JSON number '020'"
t_exit 2 "$ERODE" -s mei.steps=020 -o "$T/o" "$W"
t_one_error_line "^erode: -s mei.steps: '020' is not a JSON number"
R=$SRCDIR/configs/from-noise.json
t_exit 2 "$ERODE" -r "$R" -s stages.01.mei.steps=3 -o "$T/o" "$W"
t_one_error_line "^erode: -s stages.01.mei.steps: expected stages.N.KEY, N the stage's number from 0 without leading zeros$"
t_exit 0 "$ERODE" -r "$R" -s stages.1.mei.steps=3 --print-recipe
t_empty_dir "$T/o"
t_ok

t_case "-s stages.N.model: the keys of the stage's old section are not dropped without a word"
t_exit 2 "$ERODE" -r "$R" -s stages.1.model=droplet --print-recipe
t_one_error_line "^erode: -s stages.1.model: stage 1 sets mei.steps, which a droplet stage does not take"
t_exit 0 "$ERODE" -s 'stages=[{"model": "mei"}]' -s stages.0.model=droplet --print-recipe
jq -e '.stages[0].model == "droplet"' "$T/stdout" > /dev/null || t_fail "the stage's model was not changed"
t_ok

t_case "a missing output, preview or checkpoint directory: exit 2, one line, nothing created"
t_exit 2 "$ERODE" -s mei.steps=1 -o "$T/typo/out" "$W"
t_one_error_line "typo/out: output directory: .*(erode creates no directory: mkdir -p it first)$"
t_exit 2 "$ERODE" -s mei.steps=1 --checkpoint "$T/ck/{stem}.ckpt" -o "$T/o" "$W"
t_one_error_line "ck: --checkpoint directory: .*(erode creates no directory: mkdir -p it first)$"
[ -e "$T/typo" ] || [ -e "$T/ck" ] && t_fail "a directory was created"
t_empty_dir "$T/o"
t_ok

t_case "an eroded height layer eroded again is named after its first input"
mkdir -p "$T/one" "$T/two"
t_exit 0 "$ERODE" -q -s mei.steps=1 -o "$T/one" "$W"
t_exit 0 "$ERODE" -q --json -s mei.steps=1 --preview "$T/two/{stem}.png" -o "$T/two" "$T/one/$stem.height.tif"
for f in "$stem.height.tif" "$stem.sediment.tif" "$stem.water.tif" "$stem.png"; do
    [ -f "$T/two/$f" ] || t_fail "no $f: $(ls "$T/two" | tr '\n' ' ')"
done
jq -e ".outputs.height | endswith(\"/two/$stem.height.tif\")" "$T/stdout" > /dev/null \
    || t_fail "--json names $(jq -r .outputs.height "$T/stdout")"
cp "$T/one/$stem.height.tif" "$T/keep.tif"
t_exit 2 "$ERODE" -q -s mei.steps=1 -o "$T/one" "$T/one/$stem.height.tif"
t_one_error_line "would replace the input"
cmp -s "$T/one/$stem.height.tif" "$T/keep.tif" || t_fail "the input was changed"
t_ok

t_case "--help: no line wider than 100 columns, the exit statuses of erode(1)"
t_exit 0 "$ERODE" --help
wide=$(awk 'length > 100 { n++ } END { print n + 0 }' "$T/stdout")
[ "$wide" -eq 0 ] || t_fail "$wide lines wider than 100 columns"
sed -n '/^Exit status:/,/\.$/p' "$T/stdout" | tr '\n' ' ' | grep -oE '(^| )[0-9]{1,3}[ ,]' | tr -dc '0-9\n ' \
    | tr ' ' '\n' | grep . | sort -n | tr '\n' ' ' > "$T/help-codes"
sed -n '/^\.Sh EXIT STATUS/,/^\.Sh /p' "$SRCDIR/man/erode.1" | sed -n 's/^\.It //p' | tr -d ' ' | tr ',' '\n' \
    | sort -n | tr '\n' ' ' > "$T/man-codes"
[ -s "$T/man-codes" ] || t_fail "no exit status read from erode.1"
cmp -s "$T/help-codes" "$T/man-codes" || t_fail "--help lists $(cat "$T/help-codes"), erode(1) $(cat "$T/man-codes")"
t_ok

t_case "--version: the version, the commit and the build's features"
t_exit 0 "$ERODE" --version
head -1 "$T/stdout" | grep -qE '^erode [0-9]+\.[0-9]+\.[0-9]+$' || t_fail "bad version line: $(head -1 "$T/stdout")"
commit=$(sed -n 's/^commit: //p' "$T/stdout")
want=unknown
if [ "$(git -C "$SRCDIR" rev-parse --show-toplevel 2> /dev/null)" = "$(cd "$SRCDIR" && pwd -P)" ]; then
    want=$(git -C "$SRCDIR" describe --always 2> /dev/null)
fi
case $commit in "$want" | "$want-dirty") ;; *) t_fail "commit '$commit', the source tree is at '$want'" ;; esac
grep -qE '^features: [+-]openmp [+-]vulkan( [+-][a-z0-9]+)*$' "$T/stdout" || t_fail "bad features: $(cat "$T/stdout")"
if grep -q -- '-vulkan' "$T/stdout"; then
    t_exit 2 "$ERODE" --list-devices
    t_one_error_line "without Vulkan"
fi
t_ok

t_case "make install: erode, erode-tiles, cut-tiles, the man pages and the completion"
if have make && have install; then
    make -s -C "$SRCDIR" --no-print-directory install DESTDIR="$T/inst" PREFIX=/usr BIN="$ERODE" -o "$ERODE" \
        > "$T/make.out" 2>&1 || t_fail "make install failed: $(tail -c 300 "$T/make.out")"
    for f in bin/erode bin/erode-tiles bin/cut-tiles; do
        [ -x "$T/inst/usr/$f" ] || t_fail "no executable /usr/$f"
    done
    for f in share/man/man1/erode.1 share/man/man5/erode-recipe.5 share/bash-completion/completions/erode; do
        [ -f "$T/inst/usr/$f" ] || t_fail "no /usr/$f"
    done
    "$T/inst/usr/bin/erode-tiles" --help > /dev/null 2>&1 || t_fail "the installed erode-tiles --help failed"
    t_ok
else
    t_skip "make or install missing"
fi
