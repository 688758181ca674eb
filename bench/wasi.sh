#!/usr/bin/env bash
# WASI tool benchmarks: the manifest's tools run through `forkbox exec` (a throwaway fork of a
# directory, the server's registry and system mounts) against the same tools native, on the
# same files, in the same run. Needs `wasm/provision` first.
#
#   bench/wasi.sh                     # builds the release binary, then times each case
#   RUNS=10 bench/wasi.sh             # runs per case (default 5; medians are reported)
#   FORKBOX_BIN=path bench/wasi.sh    # use that binary, no build
#   RG=path JQ=path bench/wasi.sh     # native rg / jq to compare with (default: on PATH;
#                                     # rg may be `cargo install ripgrep --root DIR`)
#   NO_COLD=1 bench/wasi.sh           # skip the empty-cache row (it compiles python: minutes)
#
# Cases:
#   python3 print(1), warm       `python3 -c 'print(1)'`: a new forkbox process with the module
#                                in the compiled cache, and one more run in a process that
#                                has loaded it (a running server)
#   python3 print(1), cold cache the same with an empty module cache (compiles the module)
#   import numpy, pandas         `python3 -c 'import numpy, pandas'`
#   trivial WASI start           `qjs -e 0` (the smallest tool) beside native `true`
#   rg over 200 MB               `rg -c needle` over a 200 MB file in the fork
#   jq over 50 MB                `jq -c '.[] | select(.n % 1000 == 0)'` over a 50 MB array
# forkbox's numbers include its own start (runtime, fork, manifest check); the baseline's
# include process start. Each case checks first that both sides print the same.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${RUNS:-5}
target=${CARGO_TARGET_DIR:-$root/target}
if [[ -n ${FORKBOX_BIN:-} ]]; then
    bin=$FORKBOX_BIN
else
    echo "building forkbox (release)..." >&2
    cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin forkbox
    bin=$target/release/forkbox
fi
rg_native=${RG:-$(command -v rg || true)}
jq_native=${JQ:-$(command -v jq || true)}
python_native=$(command -v python3 || true)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/base"
cd "$work/base"

echo "making the data..." >&2
python3 - <<'EOF'
import json, random
random.seed(1)
words = ["alpha", "beta", "gamma", "delta", "needle", "haystack", "forkbox", "wasm"]
with open("big.txt", "w") as f:
    line = 0
    while f.tell() < 200 * 1024 * 1024:
        f.write(" ".join(random.choice(words) for _ in range(12)) + f" {line}\n")
        line += 1
with open("big.json", "w") as f:
    f.write("[")
    n = 0
    first = True
    while f.tell() < 50 * 1024 * 1024:
        f.write(("" if first else ",") + json.dumps({"n": n, "name": f"item{n}", "tags": ["a", "b"], "v": n * 0.5}))
        first = False
        n += 1
    f.write("]\n")
EOF

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# time_ms CMD...: the median wall time of `runs` runs, in milliseconds.
time_ms() {
    local i t0 t1
    for ((i = 0; i < runs; i++)); do
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1 || true
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000000))
    done | median
}

# Guest memory is charged to the session's memory budget: jaq holds a 50 MB array in far
# more than the default 256M, so the session gets room for it.
fb() { "$bin" exec --session-memory 2G --base "$work/base" -c "$1"; }

row() { # name, forkbox ms, native ms (or -)
    local ratio=-
    if [[ $3 != - && $3 -gt 0 ]]; then
        ratio=$(awk -v a="$2" -v b="$3" 'BEGIN {printf "%.1f×", a / b}')
    fi
    printf '| %s | %s ms | %s ms | %s |\n' "$1" "$2" "$3" "$ratio"
}

check() { # forkbox script, native script
    local a b
    a=$(fb "$1" 2>&1) || true
    b=$(cd "$work/base" && bash -c "$2" 2>&1) || true
    if [[ $a != "$b" ]]; then
        echo "different output for: $1" >&2
        diff <(echo "$a") <(echo "$b") | head -5 >&2
    fi
}

echo "| case | forkbox (WASI) | native | ratio |"
echo "|---|---|---|---|"

check "python3 -c 'print(1)'" "$python_native -c 'print(1)'"
row "python3 -c 'print(1)', new process, module cache warm" "$(time_ms fb "python3 -c 'print(1)'")" \
    "$(time_ms "$python_native" -c 'print(1)')"

# In a running server the module is loaded once: the cost of one more run is the
# difference between a script of 11 runs and one of 1, over 10.
py11="python3 -c 'print(1)'"
for ((i = 0; i < 10; i++)); do py11+="; python3 -c 'print(1)'"; done
one=$(time_ms fb "python3 -c 'print(1)'")
eleven=$(time_ms fb "$py11")
row "python3 -c 'print(1)', module loaded (server warm)" "$(((eleven - one) / 10))" \
    "$(time_ms "$python_native" -c 'print(1)')"
qjs11="qjs -e 0"
for ((i = 0; i < 10; i++)); do qjs11+="; qjs -e 0"; done
row "trivial WASI start, module loaded: qjs -e 0" \
    "$(( ($(time_ms fb "$qjs11") - $(time_ms fb "qjs -e 0")) / 10 ))" -

if [[ -z ${NO_COLD:-} ]]; then
cold=$(mktemp -d)
wasm_dir=${FORKBOX_WASM_DIR:-$HOME/.cache/forkbox/wasm}
cold_ms=$(
    for ((i = 0; i < 1; i++)); do
        rm -rf "$cold"/*
        t0=$(date +%s%N)
        # The module cache is under $HOME; the tools stay where they are.
        HOME=$cold FORKBOX_WASM_DIR=$wasm_dir \
            "$bin" exec --base "$work/base" -c "python3 -c 'print(1)'" >/dev/null 2>&1 || true
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000000))
    done
)
rm -rf "$cold"
row "python3 -c 'print(1)', empty module cache (1 run)" "$cold_ms" -
fi

row "python3 -c 'import numpy, pandas'" "$(time_ms fb "python3 -c 'import numpy, pandas'")" -

row "trivial WASI start: qjs -e 0 (native: true)" "$(time_ms fb "qjs -e 0")" \
    "$(time_ms fb "true")"

if [[ -n $rg_native ]]; then
    check "rg -c needle big.txt" "$rg_native -c needle big.txt"
    rg_ms=$(time_ms "$rg_native" -c needle big.txt)
    row "rg -c needle, 200 MB file, new process" "$(time_ms fb "rg -c needle big.txt")" "$rg_ms"
    # A running server has the module loaded: two searches in one process less one.
    row "rg -c needle, 200 MB file, module loaded (server warm)" \
        "$(( $(time_ms fb "rg -c needle big.txt; rg -c needle big.txt") - $(time_ms fb "rg -c needle big.txt") ))" \
        "$rg_ms"
fi
if [[ -n $jq_native ]]; then
    filter='[.[] | select(.n % 1000 == 0) | .name] | length'
    check "jq '$filter' big.json" "$jq_native '$filter' big.json"
    jq_ms=$(time_ms "$jq_native" "$filter" big.json)
    row "jq over a 50 MB array, new process" "$(time_ms fb "jq '$filter' big.json")" "$jq_ms"
    row "jq over a 50 MB array, module loaded (server warm)" \
        "$(( $(time_ms fb "jq '$filter' big.json; jq '$filter' big.json") - $(time_ms fb "jq '$filter' big.json") ))" \
        "$jq_ms"
fi
