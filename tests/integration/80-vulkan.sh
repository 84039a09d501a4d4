#!/bin/sh
# The Vulkan backend from the command line: --list-devices, --device,
# --backend vulkan|auto, and the errors when there is no Vulkan.  Cases
# that need a device skip when there is none (CI installs lavapipe).
. "$(dirname "$0")/lib.sh"

dem=$DATA/olinda_dem_f32_utm25s.tif
built=1
"$ERODE" --list-devices > "$T/devices" 2> "$T/list.err"; list_rc=$?
grep -q "built without Vulkan" "$T/list.err" && built=0
has_dev=0
[ "$list_rc" -eq 0 ] && [ -s "$T/devices" ] && has_dev=1

t_case "list-devices: one line per device, or one clear error line"
if [ "$has_dev" -eq 1 ]; then
    grep -Eq '^0: .+ \((cpu|discrete|integrated|virtual|other), Vulkan [0-9]+\.[0-9]+, [0-9]+ MiB device memory, maxStorageBufferRange [0-9]+ MiB' "$T/devices" ||
        t_fail "unexpected device line: $(head -n 1 "$T/devices")"
else
    [ "$list_rc" -eq 2 ] || t_fail "--list-devices without a device exited $list_rc, expected 2"
    [ "$(wc -l < "$T/list.err")" -eq 1 ] || t_fail "expected one error line: $(cat "$T/list.err")"
fi
t_ok

t_case "--backend vulkan without Vulkan: exit 2, one line, no outputs"
if [ "$has_dev" -eq 1 ]; then
    t_skip "this binary has a Vulkan device"
else
    mkdir -p "$T/none"
    t_exit 2 "$ERODE" --backend vulkan -o "$T/none" "$dem"
    if [ "$built" -eq 0 ]; then t_one_error_line "built without Vulkan"; else t_one_error_line "vulkan"; fi
    t_empty_dir "$T/none"
    t_ok
fi

t_case "--backend auto without a usable GPU runs on the CPU"
mkdir -p "$T/auto"
t_exit 0 "$ERODE" --backend auto -q --json -s mei.steps=2 -o "$T/auto" "$dem"
[ "$(jq -r .status "$T/stdout")" = ok ] || t_fail "auto run failed: $(cat "$T/stdout")"
if ! grep -q '(cpu,' "$T/devices" 2>/dev/null && [ "$has_dev" -eq 1 ]; then :; else
    [ "$(jq -r .backend "$T/stdout")" = cpu ] || t_fail "auto chose $(jq -r .backend "$T/stdout") with only a CPU device"
fi
t_ok

t_case "--device 99: exit 2, one line naming the device"
if [ "$has_dev" -eq 0 ]; then
    t_skip "no Vulkan device"
else
    mkdir -p "$T/d99"
    t_exit 2 "$ERODE" --backend vulkan --device 99 -o "$T/d99" "$dem"
    t_one_error_line "no device 99"
    t_empty_dir "$T/d99"
    t_ok
fi
