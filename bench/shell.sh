#!/usr/bin/env bash
# Shell benchmarks: the forkbox shell (`forkbox exec` over a throwaway fork of a directory)
# against native bash + GNU tools, on the same files, in the same run.
#
#   bench/shell.sh            # builds the release binary, then times each case
#   RUNS=50 bench/shell.sh    # more runs per command (default 20)
#   FORKBOX_BIN=path bench/shell.sh   # use that binary, no build
#   NO_HYPERFINE=1 bench/shell.sh     # time with the bash loop even if hyperfine is there
#
# Cases:
#   startup   `true`                       (process start, runtime, fork creation)
#   ls -l     `ls -l dir >/dev/null`       (a directory of 1,000 files)
#   grep -r   `grep -r needle . >/dev/null` (10,000 small files in 100 directories)
#   find      `find . -name '*.txt' | wc -l` (the same 10,000 files)
#   ${x//a*z/b}  pattern substitution over a 100,000-character value (no match: the worst
#                case for a matcher that tries every start)
#   nesting   a script of 200 nested `if`s (parsing within its bounds)
#   interpreter speed: an arithmetic loop over `$(seq 1 100000)`, a function called
#   100,000 times, `${s//a/b}` 10,000 times, `while read -r` over a 100,000-line file
#   awk sum   `awk '{s+=$3} END {print s}'` over a 1,000,000-line file
#   awk count `awk -F, '{c[$1]++} END {for (k in c) print k, c[k]}'` over the same file
# Each case first checks that both sides print the same thing (up to line order), so the
# timings compare the same work. Timing: hyperfine when installed (median of RUNS runs after
# 3 warm-ups), else a bash loop over `date +%s%N` (median of RUNS runs, sides alternating).
# Every run is a fresh process on each side: forkbox's numbers include its start-up and the
# creation of the fork, bash's include bash's start-up and the exec of ls/grep.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${RUNS:-20}
target=${CARGO_TARGET_DIR:-$root/target}
if [[ -n ${FORKBOX_BIN:-} ]]; then
    bin=$FORKBOX_BIN
else
    echo "building forkbox (release)..." >&2
    cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin forkbox
    bin=$target/release/forkbox
fi
[[ -x $bin ]] || { echo "no forkbox binary at $bin" >&2; exit 1; }

use_hyperfine=0
if [[ -z ${NO_HYPERFINE:-} ]] && command -v hyperfine >/dev/null; then
    use_hyperfine=1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/forkbox-shell-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A base with one directory of 1,000 files of varied sizes.
mkdir -p "$work/ls/dir"
for i in $(seq -w 1 1000); do
    printf 'file %s\n%*s\n' "$i" $((10#$i % 200)) '' >"$work/ls/dir/file$i.txt"
done
# A base with 10,000 small files in 100 directories; one in 100 holds the pattern.
for d in $(seq -w 0 99); do
    mkdir -p "$work/grep/src/d$d"
    for f in $(seq -w 0 99); do
        {
            printf 'line one of %s/%s\nsome text to skip over\n' "$d" "$f"
            [[ $f == 42 ]] && printf 'the needle is here\n'
            printf 'last line\n'
        } >"$work/grep/src/d$d/f$f.txt"
    done
done

# A base with one file of 100,000 lines.
mkdir -p "$work/lines"
seq 1 100000 | sed 's/$/ some words on the line/' >"$work/lines/lines.txt"
# A base with one file of 1,000,000 lines: `kN,v I J` (1,000 distinct keys before the comma,
# three blank-separated fields).
mkdir -p "$work/awk"
seq 1 1000000 | awk '{ printf "k%d,v %d %d\n", $1 % 1000, $1, $1 % 97 }' >"$work/awk/data.txt"

# same_output NAME BASE COMMAND NORMALIZE: COMMAND must print the same lines on both
# sides, after NORMALIZE (a filter run on the host) and sorting (walk order may differ).
same_output() {
    local name=$1 base=$2 cmd=$3 normalize=$4 ours theirs
    ours=$(cd "$work" && "$bin" exec --base "$base" -c "$cmd" | $normalize | LC_ALL=C sort)
    theirs=$(cd "$base" && bash -c "$cmd" | $normalize | LC_ALL=C sort)
    if [[ $ours != "$theirs" ]]; then
        echo "$name: forkbox and bash print different output; not timing it" >&2
        diff <(echo "$theirs") <(echo "$ours") | head -20 >&2
        return 1
    fi
}

# ls -l columns both sides agree on by construction: type and mode, size, name (owner,
# group and times differ: forkbox shows the session user and the fork's own times).
ls_columns() {
    awk '$1 != "total" { print $1, $5, $NF }'
}

# median of the numbers on stdin
median() {
    sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# time_pair BASE SCRIPT: prints "forkbox_median_s bash_median_s".
time_pair() {
    local base=$1 script=$2
    local ours="$bin exec --base $base -c '$script'"
    local theirs="bash -c '$script'"
    if [[ $use_hyperfine == 1 ]]; then
        local json=$work/hyperfine.json
        # -N: no intermediate shell, whose start-up hyperfine cannot subtract exactly
        # from commands this short.
        (cd "$base" && hyperfine -N --style none --warmup 3 --runs "$runs" \
            --export-json "$json" -n forkbox "$ours" -n bash "$theirs" >&2)
        grep -o '"median": *[0-9.e-]*' "$json" | awk '{ printf "%s ", $2 } END { print "" }'
    else
        local a b i t0 t1 t2
        a=$work/a.txt b=$work/b.txt
        : >"$a"
        : >"$b"
        for ((i = 0; i < runs + 3; i++)); do
            t0=$(date +%s%N)
            (cd "$base" && eval "$ours") >/dev/null
            t1=$(date +%s%N)
            (cd "$base" && eval "$theirs") >/dev/null
            t2=$(date +%s%N)
            if ((i >= 3)); then # the first three are warm-ups
                echo $(((t1 - t0))) >>"$a"
                echo $(((t2 - t1))) >>"$b"
            fi
        done
        echo "$(median <"$a" | awk '{ print $1 / 1e9 }') $(median <"$b" | awk '{ print $1 / 1e9 }')"
    fi
}

echo "forkbox: $bin"
echo "timing: $( ((use_hyperfine)) && hyperfine --version || echo 'bash loop, date +%s%N'), $runs runs"
echo
echo "| case | files | forkbox median | bash + GNU median | forkbox / bash |"
echo "|---|---|---|---|---|"
# row NAME FILES BASE COMMAND NORMALIZE: checks COMMAND, then times it with its output
# sent to /dev/null on both sides.
row() {
    local name=$1 files=$2 base=$3 cmd=$4 normalize=$5 f b
    same_output "$name" "$base" "$cmd" "$normalize" || return 0
    read -r f b < <(time_pair "$base" "$cmd >/dev/null")
    awk -v n="$name" -v files="$files" -v f="$f" -v b="$b" 'BEGIN {
        printf "| %s | %s | %.1f ms | %.1f ms | %.2f |\n", n, files, f * 1e3, b * 1e3, f / b
    }'
}
row 'startup (`true`)' 0 "$work/ls" 'true' cat
row '`ls -l dir`' 1000 "$work/ls" 'ls -l dir' ls_columns
row '`grep -r needle .`' 10000 "$work/grep" 'grep -r needle .' cat
row '`find . -name "*.txt" | wc -l`' 10000 "$work/grep" 'find . -name "*.txt" | wc -l' cat
row '`${x//a*z/b}`, 100,000 chars' 0 "$work/ls" \
    'x=$(printf "%100000s" "" | tr " " a); y=${x//a*z/b}; echo ${#y}' cat
row '200 nested `if`s' 0 "$work/ls" \
    'eval "$(for i in $(seq 200); do printf "if true; then "; done; echo ": ok;"; for i in $(seq 200); do printf "fi; "; done)"' cat
row 'loop: `x=$((x+i))` over `$(seq 1 100000)`' 0 "$work/ls" \
    'x=0; for i in $(seq 1 100000); do x=$((x+i)); done; echo $x' cat
row 'a function called 100,000 times' 0 "$work/ls" \
    'f() { n=$((n+1)); }; n=0; for ((i = 0; i < 100000; i++)); do f; done; echo $n' cat
row '`${s//a/b}` 10,000 times' 0 "$work/ls" \
    's=abracadabra-abracadabra; for ((i = 0; i < 10000; i++)); do t=${s//a/b}; done; echo $t' cat
row '`while read -r line` over 100,000 lines' 1 "$work/lines" \
    'n=0; while read -r line; do n=$((n+1)); done < lines.txt; echo $n' cat
row '`awk "{s+=$3} END {print s}"`, 1,000,000 lines' 1 "$work/awk" \
    'awk "{s+=\$3} END {print s}" data.txt' cat
row '`awk -F, "{c[$1]++} END {for (k in c) print k, c[k]}"`, 1,000,000 lines' 1 "$work/awk" \
    'awk -F, "{c[\$1]++} END {for (k in c) print k, c[k]}" data.txt' cat
