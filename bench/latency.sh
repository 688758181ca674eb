#!/usr/bin/env bash
# SSH round-trip latency: `ssh host 'echo hi'` with the real OpenSSH client against
#   forkbox     `forkbox serve` (anonymous; each connection takes a fork and deletes it)
#   floor       examples/ssh_floor.rs: a russh server with forkbox's TCP settings that
#               answers exec with exit status 0 and does nothing else
#   openssh     OpenSSH's sshd + bash on the same machine (public-key login as this user)
# all on loopback, in the same run.
#
# The method, made for a machine others share: runs are interleaved. Each round runs the
# three servers once each, in an order shuffled per round (seeded), so every server sees
# the same minutes of load and none always follows another's teardown; 5 warm-up rounds
# are not counted. The figures to read are per round: forkbox's time divided by the
# floor's *in the same round* (a paired ratio; load that changes between rounds cancels),
# reported as the median of the RUNS paired ratios with its quartiles, beside the ratio of
# the medians. Timing one server's block of runs and then the other's (hyperfine) lets the
# load change between the blocks: on this two-core machine that moved the floor's own
# median by 1.7× between runs, so hyperfine is only run when asked (HYPERFINE=1).
#
#   bench/latency.sh            # builds the release binaries, then times each server
#   RUNS=200 bench/latency.sh   # more rounds (default 100)
#   FORKBOX_BIN=… FLOOR_BIN=… bench/latency.sh   # time these binaries, build nothing
#   FORKBOX_ARGS='--fork-pool 0' bench/latency.sh  # more options for `forkbox serve`
#   NO_OPENSSH=1 bench/latency.sh  # forkbox and the floor only (no sshd needed)
#   HYPERFINE=1 bench/latency.sh   # also hyperfine's block timings, for comparison
#
# forkbox is timed once it has loaded its WASI modules: `forkbox serve` loads them in the
# background at start (python's alone is a second of CPU), and timing sessions while
# that runs measures the start-up, not a session.
#
# Needs OpenSSH's server unless NO_OPENSSH=1, hyperfine if HYPERFINE=1 (Debian: `apt-get
# install openssh-server hyperfine`). sshd must run as root here (it is started from a
# temporary config on a free port).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${RUNS:-100}
target=${CARGO_TARGET_DIR:-$root/target}
openssh=$([[ -n ${NO_OPENSSH:-} ]] && echo 0 || echo 1)
need=(ssh ssh-keygen python3)
(( openssh )) && need+=(/usr/sbin/sshd)
[[ -n ${HYPERFINE:-} ]] && need+=(hyperfine)
for tool in "${need[@]}"; do
    command -v "$tool" >/dev/null || { echo "bench/latency.sh needs $tool" >&2; exit 1; }
done

if [[ -n ${FORKBOX_BIN:-} && -n ${FLOOR_BIN:-} ]]; then
    bin=$FORKBOX_BIN
    floor=$FLOOR_BIN
else
    echo "building forkbox and the floor server (release)..." >&2
    cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin forkbox --example ssh_floor
    bin=$target/release/forkbox
    floor=$target/release/examples/ssh_floor
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/forkbox-latency-bench.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# forkbox on its embedded default (local filesystem), limits opened for a benchmark.
fport=$(free_port)
"$bin" serve --listen "127.0.0.1:$fport" --data-dir "$work/forkbox" \
    --max-sessions-per-ip 100000 --max-connections-per-minute-per-ip 1000000 \
    ${FORKBOX_ARGS:-} >"$work/forkbox.log" 2>&1 &
pids+=($!)

# The floor.
"$floor" 127.0.0.1:0 >"$work/floor.out" 2>&1 &
pids+=($!)

# A key for the client (any key logs in to forkbox and the floor).
ssh-keygen -q -t ed25519 -N '' -f "$work/client_key"
sport=
if (( openssh )); then
    # OpenSSH's sshd with a key of its own, letting the client's key in.
    ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
    cp "$work/client_key.pub" "$work/authorized_keys"
    sport=$(free_port)
    cat >"$work/sshd_config" <<CONF
Port $sport
ListenAddress 127.0.0.1
HostKey $work/host_key
AuthorizedKeysFile $work/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin yes
PidFile $work/sshd.pid
LogLevel ERROR
CONF
    mkdir -p /run/sshd
    /usr/sbin/sshd -D -f "$work/sshd_config" -E "$work/sshd.log" &
    pids+=($!)
fi

# Wait for all of them to accept.
for _ in $(seq 1 100); do
    fl=$(sed -n 's/^listening on 127.0.0.1://p' "$work/floor.out" 2>/dev/null || true)
    if [[ -n $fl ]] && (exec 3<>"/dev/tcp/127.0.0.1/$fport") 2>/dev/null \
        && { [[ -z $sport ]] || (exec 3<>"/dev/tcp/127.0.0.1/$sport") 2>/dev/null; }; then
        break
    fi
    sleep 0.1
done
[[ -n ${fl:-} ]] || { echo "the floor server did not start" >&2; exit 1; }

# Wait for forkbox's background load of its WASI modules to end (one log line per tool).
tools=$(sed -n 's/.*WASI tools ready tools=//p' "$work/forkbox.log" | head -1)
want=$(wc -w <<<"$tools")
for _ in $(seq 1 1200); do
    got=$(grep -c 'WASI module \(loaded\|not loaded\)' "$work/forkbox.log" || true)
    (( got >= want )) && break
    sleep 0.1
done
(( ${got:-0} >= want )) || echo "warning: forkbox was still loading WASI modules" >&2

opts="-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
-o BatchMode=yes -o IdentitiesOnly=yes -i $work/client_key"
user=$(id -un)
# Each side must answer before it is timed.
for port in "$fport" "$fl" $sport; do
    out=$(ssh $opts -p "$port" "$user@127.0.0.1" 'echo hi' || true)
    if [[ $port != "$fl" && $out != hi ]]; then
        echo "port $port answered '$out', not 'hi'" >&2
        exit 1
    fi
done

if [[ -n ${HYPERFINE:-} ]]; then
    uptime >&2
    cmds=(-n forkbox "ssh $opts -p $fport $user@127.0.0.1 'echo hi'"
          -n floor "ssh $opts -p $fl $user@127.0.0.1 'echo hi'")
    [[ -n $sport ]] && cmds+=(-n openssh "ssh $opts -p $sport $user@127.0.0.1 'echo hi'")
    hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/latency.json" "${cmds[@]}" >&2
    python3 - "$work/latency.json" <<'PY'
import json, statistics, sys
results = {r["command"]: r["times"] for r in json.load(open(sys.argv[1]))["results"]}
med = {k: statistics.median(v) * 1000 for k, v in results.items()}
print("hyperfine (blocks of runs, one server after the other):")
print(f"{'server':<10}{'min ms':>9}{'median ms':>11}{'p90 ms':>9}")
for name, times in results.items():
    ms = sorted(t * 1000 for t in times)
    print(f"{name:<10}{ms[0]:>9.1f}{med[name]:>11.1f}{ms[int(0.9 * (len(ms) - 1))]:>9.1f}")
print(f"forkbox / floor (medians): {med['forkbox'] / med['floor']:.2f}x")
if "openssh" in med:
    print(f"openssh / forkbox (medians): {med['openssh'] / med['forkbox']:.2f}x")
PY
fi

echo "load before the interleaved rounds: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
python3 - "$runs" "$fport" "$fl" "${sport:-}" "$user" $opts <<'PY'
import random, statistics, subprocess, sys, time
runs, fport, fl, sport, user = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
opts = sys.argv[6:]
servers = [("forkbox", fport), ("floor", fl)] + ([("openssh", sport)] if sport else [])
times = {name: [] for name, _ in servers}
order = random.Random(14)
for i in range(5 + runs):
    round_ = servers[:]
    order.shuffle(round_)
    for name, port in round_:
        start = time.perf_counter()
        subprocess.run(["ssh", *opts, "-p", port, f"{user}@127.0.0.1", "echo hi"],
                       stdout=subprocess.DEVNULL, check=True)
        if i >= 5:
            times[name].append((time.perf_counter() - start) * 1000)

def quartiles(xs):
    q = statistics.quantiles(xs, n=4)
    return q[0], statistics.median(xs), q[2]

print(f"interleaved, {runs} rounds (each server once per round, shuffled order):")
print(f"{'server':<10}{'min ms':>9}{'median ms':>11}{'p90 ms':>9}")
for name, ms in times.items():
    s = sorted(ms)
    print(f"{name:<10}{s[0]:>9.1f}{statistics.median(s):>11.1f}{s[int(0.9 * (len(s) - 1))]:>9.1f}")
paired = [f / b for f, b in zip(times["forkbox"], times["floor"])]
lo, mid, hi = quartiles(paired)
print(f"forkbox / floor, paired per round: median {mid:.2f}x (quartiles {lo:.2f}-{hi:.2f})")
ratio = statistics.median(times["forkbox"]) / statistics.median(times["floor"])
print(f"forkbox / floor, ratio of medians: {ratio:.2f}x")
if "openssh" in times:
    paired = [o / f for o, f in zip(times["openssh"], times["forkbox"])]
    lo, mid, hi = quartiles(paired)
    print(f"openssh / forkbox, paired per round: median {mid:.1f}x (quartiles {lo:.1f}-{hi:.1f})")
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
