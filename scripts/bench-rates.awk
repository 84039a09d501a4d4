# The per-cell-per-step rates of the bench records (man/bench/*.txt) as
# rows of C for erode --plan's time estimate (cli/plan.c); the Makefile
# writes them to build/gen/er_bench_rates.h.  A row: the bench name (a
# model's), its threads, map size, ns per cell and step, the machine and
# commit the record names.  Contended runs are left out.
FNR == 1 { machine = ""; commit = "" }
/^# machine: / { sub(/^# machine: /, ""); gsub(/["\\]/, ""); machine = $0; next }
/^# commit: / { commit = $3; next }
/^bench=/ && !/contended=/ {
    name = ""; size = ""; thr = ""; rate = ""
    for (i = 1; i <= NF; i++) {
        split($i, kv, "=")
        if (kv[1] == "bench") name = kv[2]
        else if (kv[1] == "size") size = kv[2]
        else if (kv[1] == "threads") thr = kv[2]
        else if (kv[1] == "ns_per_cell_step" || kv[1] == "ns_per_cell") rate = kv[2]
    }
    if (name != "" && rate != "" && thr != "" && size != "")
        printf "ER_BENCH_RATE(\"%s\", %s, %s, %s, \"%s\", \"%s\")\n", name, thr, size, rate, machine, commit
}
