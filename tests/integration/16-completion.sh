#!/bin/sh
# scripts/completion/erode.bash: sourced in a plain (non-interactive) bash,
# its _erode function completes options, choices, layer lists, recipe keys
# and file names; the options and keys it offers are exactly those of the
# binary's --help and --print-recipe.
. "$(dirname "$0")/lib.sh"
COMP=$SRCDIR/scripts/completion/erode.bash

if ! have bash; then
    t_case "bash completion"; t_skip "bash not installed"
    exit 0
fi
mkdir -p "$T/dir/sub"
: > "$T/dir/a.tif"; : > "$T/dir/b.PNG"; : > "$T/dir/c.json"; : > "$T/dir/d.txt"; : > "$T/dir/e.tiff"

# comp WORD...: what completing the last word offers, one a line, sorted.
comp() {
    (cd "$T/dir" && bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _erode
        printf "%s\n" "${COMPREPLY[@]}" | sort' comp "$COMP" "$ERODE" "$@")
}
# expect "WANTED" WORD...: the completion offers exactly WANTED (space-separated).
expect() {
    want=$1; shift
    got=$(comp "$@" | tr '\n' ' ' | sed 's/ $//')
    [ "$got" = "$want" ] || t_fail "'erode $*<TAB>' offered '$got', expected '$want'"
}

t_case "completion: options are --help's, no more, no fewer"
comp -- | grep -- '^--' > "$T/offered"
"$ERODE" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u > "$T/help"
cmp -s "$T/offered" "$T/help" || t_fail "differs from --help: $(diff "$T/help" "$T/offered" | grep '^[<>]' | tr '\n' ' ')"
expect "--layers" --la
expect "--preview --preview-pair" --prev
t_ok

t_case "completion: -s offers every key of --print-recipe, then its default"
comp -s "" | sed 's/=$//' > "$T/keys"
"$ERODE" --print-recipe | jq -r 'paths(type != "object") | map(tostring) | join(".")' | sort > "$T/want"
cmp -s "$T/keys" "$T/want" || t_fail "differs from --print-recipe: $(diff "$T/want" "$T/keys" | grep '^[<>]' | tr '\n' ' ')"
expect "mei.kc= mei.kd= mei.ke= mei.ks=" -s mei.k
expect "hardness=" -s ha
# Readline splits at '=' (COMP_WORDBREAKS): "mei.steps" "=" "", and it
# replaces only the text after the '='.
expect "$("$ERODE" --print-recipe | jq .mei.steps)" --set mei.steps =
expect "mei" -s model = m
expect "droplet" -s model = d
expect "sph stream_power" -s model = s
t_ok

t_case "completion: -s model= offers the models of --help, which are the model list's"
comp -s model = "" > "$T/models"
sed -n 's/^ER_MODEL([A-Z_0-9]*, *\([a-z_0-9]*\))$/\1/p' "$SRCDIR/core/models.def" | sort > "$T/want"
cmp -s "$T/models" "$T/want" || t_fail "offered $(tr '\n' ' ' < "$T/models"), the list has $(tr '\n' ' ' < "$T/want")"
[ -s "$T/want" ] || t_fail "no model read from core/models.def"
t_ok

t_case "completion: choices and layer lists from --help"
expect "exr png r16 r32 tif" -f ""
expect "r16 r32" -f r
expect "PIXEL_TYPE= PREDICTOR=" --co P
expect "HALF" --co PIXEL_TYPE = H
expect "BOTTOM_UP" --co ROW_ORDER = B
expect "PIZ PXR24" --co COMPRESS = P
expect "DEFLATE" --co COMPRESS = D
expect "NODATA_FILL=" --co NO
expect "vulkan" --backend v
expect "bar" --progress = b
expect "auto bar json lines none" --progress = ""
expect "tif" --format = t
expect "height,sediment" --layers height,se
expect "deposit erosion flow height sediment water wear" --layers ""
t_ok

t_case "completion: file names by what each option takes"
expect "a.tif b.PNG e.tiff sub" ""
expect "c.json sub" -r ""
expect "b.PNG sub" --preview ""
expect "sub" -o ""
expect "a.tif" -j 2 a
t_ok

t_case "completion: -s stages. offers the stages of the -r recipe, then what a stage holds"
R=$SRCDIR/configs/from-noise.json
expect "stages.0. stages.1." -r "$R" -s stages.
expect "stages.0. stages.1." --recipe "$R" -s stages.
expect "" -s stages.
expect "stages.0.stream_power.steps=" -r "$R" -s stages.0.stream_power.st
expect "stages.1.mei.steps=" -r "$R" -s stages.1.mei.ste
expect "" -r "$R" -s stages.0.mei.
expect "stages.0.seed=" -r "$R" -s stages.0.se
expect "stages.0.droplet.count=" -r "$R" -s stages.0.model=droplet -s stages.0.droplet.cou
t_ok

t_case "completion: -s stages.N.model= offers the models"
expect "sph stream_power" -r "$R" -s stages.0.model = s
comp -r "$R" -s stages.1.model = "" > "$T/models"
sed -n 's/^ER_MODEL([A-Z_0-9]*, *\([a-z_0-9]*\))$/\1/p' "$SRCDIR/core/models.def" | sort > "$T/want"
cmp -s "$T/models" "$T/want" || t_fail "offered $(tr '\n' ' ' < "$T/models")"
t_ok

t_case "completion: after stitch only the options erode stitch uses, as --help lists them"
comp stitch -- > "$T/offered"
"$ERODE" --help | sed -n '/^Stitch options:/,/)\.$/p' | grep -oE -- '--?[a-zA-Z][a-z-]*' | while read -r o; do
    case $o in --*) echo "$o" ;; *) "$ERODE" --help | grep -o -- "^  $o, --[a-z-]*" | sed 's/.* //' ;; esac
done | sort -u > "$T/want"
[ -s "$T/want" ] || t_fail "no stitch options read from --help"
cmp -s "$T/offered" "$T/want" || t_fail "offered $(tr '\n' ' ' < "$T/offered"), --help lists $(tr '\n' ' ' < "$T/want")"
grep -qx -- --frames "$T/offered" && t_fail "stitch offered --frames"
expect "--layers" stitch --tile-set x --la
expect "--frame-every --frames" --fr
t_ok
