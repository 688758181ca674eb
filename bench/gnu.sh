#!/usr/bin/env bash
# The GNU toolbox benchmark of issue 13: forkbox's native commands (through `forkbox exec`
# over a throwaway fork of a local directory) against bash + the GNU tools on the same
# files, in the same run.
#
#   bench/gnu.sh                      # builds the release binary, then times each case
#   FORKBOX_BIN=path bench/gnu.sh     # use that binary, no build
#   RUNS=10 bench/gnu.sh              # runs per command (default 5, after 1 warm-up)
#
# Data: one file of 1,000,000 lines (about 60 MB): `kN,v I J the quick brown fox…`
# (1,000 keys before the comma, three blank-separated fields before the filler text);
# 10,000 small files in 100 directories; 100 files of 1 MB of text for tar.
# Each case first checks that both sides print the same thing (sorted), then hyperfine
# times both (median). forkbox's numbers include its start-up and the fork's creation.
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
[[ -x $bin ]] || { echo "no forkbox binary at $bin" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "hyperfine is needed" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/forkbox-gnu-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/big" "$work/files" "$work/tar/src"
seq 1 1000000 | awk '{ printf "k%d,v %d %d the quick brown fox jumps over a lazy dog\n", $1 % 1000, $1, $1 % 97 }' \
    >"$work/big/data.txt"
for d in $(seq -w 0 99); do
    mkdir -p "$work/files/d$d"
    for f in $(seq -w 0 99); do
        printf 'file %s/%s\n' "$d" "$f" >"$work/files/d$d/f$f.txt"
    done
done
for i in $(seq -w 1 100); do
    # (head stops the pipe early: its SIGPIPE is expected)
    { seq 1 200000 | sed "s/^/$i /" | head -c 1000000 || true; } >"$work/tar/src/part$i.txt"
done

# same_output NAME BASE COMMAND: COMMAND prints the same lines on both sides.
same_output() {
    local name=$1 base=$2 cmd=$3 ours theirs
    ours=$(cd "$work" && "$bin" exec --base "$base" -c "$cmd" | LC_ALL=C sort)
    theirs=$(cd "$base" && bash -c "$cmd" | LC_ALL=C sort)
    if [[ $ours != "$theirs" ]]; then
        echo "$name: forkbox and bash print different output; not timing it" >&2
        diff <(echo "$theirs") <(echo "$ours") | head -10 >&2
        return 1
    fi
}

echo "forkbox: $bin"
echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo), $(uname -sr)"
echo "data: $(du -sh "$work/big/data.txt" | cut -f1) file of $(wc -l <"$work/big/data.txt") lines"
echo
echo "| case | forkbox median | bash + GNU median | forkbox / GNU |"
echo "|---|---|---|---|"
row() {
    local name=$1 base=$2 cmd=$3 json=$work/hf.json f b
    same_output "$name" "$base" "$cmd" || return 0
    (cd "$base" && hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$json" \
        -n forkbox "$bin exec --base $base -c '$cmd >/dev/null'" \
        -n bash "bash -c '$cmd >/dev/null'" >&2)
    read -r f b < <(grep -o '"median": *[0-9.e-]*' "$json" | awk '{ printf "%s ", $2 } END { print "" }')
    awk -v n="$name" -v f="$f" -v b="$b" 'BEGIN {
        printf "| %s | %.0f ms | %.0f ms | %.2f |\n", n, f * 1e3, b * 1e3, f / b
    }'
}
row '`awk "{s+=$3} END {print s}"`' "$work/big" 'awk "{s+=\$3} END {print s}" data.txt'
row '`awk -F, "{c[$1]++} END {…}"`' "$work/big" 'awk -F, "{c[\$1]++} END {for (k in c) print k, c[k]}" data.txt'
row '`sort | uniq -c | sort -rn | head`' "$work/big" 'cut -d" " -f3 data.txt | sort | uniq -c | sort -rn | head'
row '`sed s/o/0/g | tail -1`' "$work/big" 'sed s/o/0/g data.txt | tail -1'
row '`grep -c`' "$work/big" 'grep -c "k42,v" data.txt'
row '`wc -l`' "$work/big" 'wc -l data.txt'
row '`cut -d, -f2 | tail -1`' "$work/big" 'cut -d, -f2 data.txt | tail -1'
row '`find . -name "*.txt" | wc -l`, 10,000 files' "$work/files" 'find . -name "*.txt" | wc -l'
row '`tar czf` of 100 MB' "$work/tar" 'tar czf /tmp/out.tgz src && echo done'
