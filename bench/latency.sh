#!/usr/bin/env bash
# SSH round-trip latency: `ssh host 'echo hi'` with the real OpenSSH client against
#   forkbox     `forkbox serve` (anonymous; each connection makes and deletes a fork)
#   floor       examples/ssh_floor.rs: a russh server with forkbox's TCP settings that
#               answers exec with exit status 0 and does nothing else
#   openssh     OpenSSH's sshd + bash on the same machine (public-key login as this user)
# all on loopback, in the same run, timed by hyperfine (median of RUNS runs after warm-ups);
# then forkbox and the floor once more, interleaved run by run (a python loop, RUNS runs
# each), so that both see the same load: on a machine others share, hyperfine's runs of
# one server and then the other can fall in different minutes, and the ratio of the
# interleaved medians is the one to read.
#
#   bench/latency.sh            # builds the release binaries, then times each server
#   RUNS=200 bench/latency.sh   # more runs (default 100)
#   FORKBOX_BIN=… FLOOR_BIN=… bench/latency.sh   # time these binaries, build nothing
#   FORKBOX_ARGS='--fork-pool 0' bench/latency.sh  # more options for `forkbox serve`
#
# forkbox is timed once it has loaded its WASI modules: `forkbox serve` loads them in the
# background at start (python's alone is a second of CPU), and timing sessions while
# that runs measures the start-up, not a session (on two cores it made the median 1.7×
# the floor's instead of 1.2×).
#
# Needs hyperfine and OpenSSH's server (Debian: `apt-get install hyperfine openssh-server`).
# sshd must run as root here (it is started from a temporary config on a free port).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${RUNS:-100}
target=${CARGO_TARGET_DIR:-$root/target}
for tool in hyperfine /usr/sbin/sshd ssh ssh-keygen python3; do
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

# OpenSSH's sshd with a key of its own and one for the client.
ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$work/client_key"
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

# Wait for all three to accept.
for _ in $(seq 1 100); do
    fl=$(sed -n 's/^listening on 127.0.0.1://p' "$work/floor.out" 2>/dev/null || true)
    if [[ -n $fl ]] && (exec 3<>"/dev/tcp/127.0.0.1/$fport") 2>/dev/null \
        && (exec 3<>"/dev/tcp/127.0.0.1/$sport") 2>/dev/null; then
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
for port in "$fport" "$sport"; do
    out=$(ssh $opts -p "$port" "$user@127.0.0.1" 'echo hi')
    [[ $out == hi ]] || { echo "port $port answered '$out', not 'hi'" >&2; exit 1; }
done
ssh $opts -p "$fl" "$user@127.0.0.1" 'echo hi' >/dev/null

uptime >&2
hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/latency.json" \
    -n forkbox "ssh $opts -p $fport $user@127.0.0.1 'echo hi'" \
    -n floor "ssh $opts -p $fl $user@127.0.0.1 'echo hi'" \
    -n openssh "ssh $opts -p $sport $user@127.0.0.1 'echo hi'" >&2

python3 - "$work/latency.json" <<'PY'
import json, statistics, sys
results = {r["command"]: r["times"] for r in json.load(open(sys.argv[1]))["results"]}
med = {k: statistics.median(v) * 1000 for k, v in results.items()}
print(f"{'server':<10}{'min ms':>9}{'median ms':>11}{'p90 ms':>9}")
for name, times in results.items():
    ms = sorted(t * 1000 for t in times)
    p90 = ms[int(0.9 * (len(ms) - 1))]
    print(f"{name:<10}{ms[0]:>9.1f}{med[name]:>11.1f}{p90:>9.1f}")
print(f"forkbox / floor (median): {med['forkbox'] / med['floor']:.2f}x")
print(f"openssh / forkbox (median): {med['openssh'] / med['forkbox']:.2f}x")
PY

uptime >&2
python3 - "$runs" "$fport" "$fl" "$user" $opts <<'PY'
import statistics, subprocess, sys, time
runs, fport, fl, user, opts = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
servers = [("forkbox", fport), ("floor", fl)]
times = {name: [] for name, _ in servers}
for i in range(5 + runs):
    # Alternate which goes first, so neither always follows the other's teardown.
    for name, port in servers if i % 2 == 0 else servers[::-1]:
        start = time.perf_counter()
        subprocess.run(["ssh", *opts, "-p", port, f"{user}@127.0.0.1", "echo hi"],
                       stdout=subprocess.DEVNULL, check=True)
        if i >= 5:
            times[name].append((time.perf_counter() - start) * 1000)
print(f"interleaved, {runs} runs each:")
print(f"{'server':<10}{'min ms':>9}{'median ms':>11}{'p90 ms':>9}")
for name, ms in times.items():
    ms.sort()
    print(f"{name:<10}{ms[0]:>9.1f}{statistics.median(ms):>11.1f}{ms[int(0.9 * (len(ms) - 1))]:>9.1f}")
ratio = statistics.median(times["forkbox"]) / statistics.median(times["floor"])
print(f"forkbox / floor (interleaved medians): {ratio:.2f}x")
PY
