"""A second SSH client (asyncssh) driving forkbox the way agent frameworks do."""
import asyncio, json, sys

import asyncssh

PORT = int(sys.argv[1])


async def connect():
    return await asyncssh.connect(
        "127.0.0.1", port=PORT, username="agent", password="any",
        known_hosts=None, client_keys=None, agent_path=None)


async def read_until(stream, marker):
    text = ""
    while marker not in text:
        chunk = await asyncio.wait_for(stream.read(4096), 30)
        if not chunk:
            break
        text += chunk
    return text


async def signal():
    """Runs the command in argv[3] (by default a shell's `sleep`), which prints a first
    line, then computes or waits without end; sends it SIGINT once that line is read."""
    command = sys.argv[3] if len(sys.argv) > 3 else "echo started; sleep 100; echo never"
    async with await connect() as conn:
        proc = await conn.create_process(command)
        # A WASI tool's first start on a server compiles its module: give it time.
        first = await asyncio.wait_for(proc.stdout.readline(), 240)
        proc.send_signal("INT")
        res = await asyncio.wait_for(proc.wait(), 30)
        return {"first": first, "rest": res.stdout, "status": res.exit_status,
                "signal": list(res.exit_signal) if res.exit_signal else None}


async def killed():
    """Runs the command in argv[3] and reports how its channel ended."""
    async with await connect() as conn:
        res = await asyncio.wait_for(conn.run(sys.argv[3], check=False), 60)
        return {"stdout": res.stdout, "stderr": res.stderr, "status": res.exit_status,
                "signal": list(res.exit_signal) if res.exit_signal else None}


async def window_change():
    async with await connect() as conn:
        proc = await conn.create_process(term_type="xterm", term_size=(80, 24))
        names = " ".join(f"file{i:02d}" for i in range(30))
        proc.stdin.write(f"mkdir d; cd d; touch {names}; echo START$((1+1))\n")
        await read_until(proc.stdout, "START2")
        proc.stdin.write("ls; echo WIDE$((1+1))\n")
        wide = await read_until(proc.stdout, "WIDE2")
        proc.change_terminal_size(40, 24)
        proc.stdin.write("ls; echo NARROW$((1+1))\n")
        narrow = await read_until(proc.stdout, "NARROW2")
        proc.stdin.write("exit 3\n")
        res = await asyncio.wait_for(proc.wait(), 30)
        return {"wide": wide, "narrow": narrow, "status": res.exit_status}


async def many_channels():
    async with await connect() as conn:
        async def one(i):
            r = await conn.run(f"echo {i} > f{i}; cat f{i}", check=False)
            return [r.stdout, r.exit_status]
        runs = await asyncio.gather(*(one(i) for i in range(16)))
        shared = await conn.run("ls f* | wc -l", check=False)
        return {"runs": runs, "shared": shared.stdout}


async def echo_round(proc, word):
    """Sends a line to a `cat` channel and waits for it to come back."""
    proc.stdin.write(word + "\n")
    return await read_until(proc.stdout, word)


async def neighbour_not_reading_output():
    """One channel prints without end and its output is never read (its window closes);
    the connection's other channels must go on as if it were not there."""
    async with await connect() as conn:
        echo = await conn.create_process("cat")
        first = await echo_round(echo, "before")
        hog = await conn.create_process("yes forkbox-output-nobody-reads")
        # Long enough for the hog's window to close: asyncssh stops granting window
        # once a window's worth waits unread.
        await asyncio.sleep(2)
        after = await echo_round(echo, "after")
        runs = [(await asyncio.wait_for(conn.run(f"echo new{i}", check=False), 30)).stdout
                for i in range(3)]
        echo.stdin.write_eof()
        await asyncio.wait_for(echo.wait(), 30)
        hog.close()
        return {"first": first, "after": after, "runs": runs}


async def neighbour_not_reading_input():
    """One channel's command never reads its stdin while the client sends it megabytes;
    the connection's other channels must go on as if it were not there."""
    async with await connect() as conn:
        echo = await conn.create_process("cat")
        first = await echo_round(echo, "before")
        hog = await conn.create_process("sleep 100", encoding=None)
        hog.stdin.write(b"x" * (int(sys.argv[3]) << 20))
        # Long enough for the hog's input to fill what forkbox queues for it.
        await asyncio.sleep(3)
        after = await echo_round(echo, "after")
        runs = [(await asyncio.wait_for(conn.run(f"echo new{i}", check=False), 30)).stdout
                for i in range(3)]
        echo.stdin.write_eof()
        await asyncio.wait_for(echo.wait(), 30)
        hog.close()
        return {"first": first, "after": after, "runs": runs}


async def lone_channel_fed_without_end():
    """The connection's only channel runs a command that never reads its stdin while the
    client feeds it without end; a channel opened after it must still answer."""
    async with await connect() as conn:
        hog = await conn.create_process("sleep 90", encoding=None)

        async def feed():
            chunk = b"x" * 65536
            while True:
                hog.stdin.write(chunk)
                await hog.stdin.drain()

        feeder = asyncio.ensure_future(feed())
        # Long enough for the hog's input to fill what forkbox takes for it.
        await asyncio.sleep(3)
        runs = [(await asyncio.wait_for(conn.run(f"echo new{i}", check=False), 30)).stdout
                for i in range(2)]
        feeder.cancel()
        hog.close()
        return {"runs": runs, "hog_running": hog.exit_status is None}


async def read_past(stream, marker):
    """Reads until `marker`, keeping only the tail (the output may be megabytes)."""
    tail = ""
    while True:
        chunk = await asyncio.wait_for(stream.read(65536), 30)
        if not chunk:
            return False
        tail = (tail + chunk)[-(len(marker) + 65536):]
        if marker in tail:
            return True


async def paste_while_output_waits():
    """On a terminal, a command prints without end and its output is not read (its window
    closes); meanwhile megabytes are pasted, then Ctrl-C. The session must take it all:
    the Ctrl-C stops the command, and the next command line runs."""
    async with await connect() as conn:
        proc = await conn.create_process(term_type="xterm", term_size=(80, 24))
        proc.stdin.write("seq 1 100000000\n")
        # Once the command prints (a loaded machine may take seconds to get there: a
        # paste before it would go to the prompt instead), stop reading: its output
        # then waits for window.
        await read_until(proc.stdout, "\r\n2\r\n")
        await asyncio.sleep(2)
        proc.stdin.write("x" * (int(sys.argv[3]) << 20))
        proc.stdin.write("\x03")
        await asyncio.sleep(2)
        proc.stdin.write("echo PASTE$((6*7))\n")
        found = await read_past(proc.stdout, "PASTE42")
        proc.stdin.write("exit 5\n")
        res = await asyncio.wait_for(proc.wait(), 30)
        return {"found": found, "status": res.exit_status}


print(json.dumps(asyncio.run(globals()[sys.argv[2]]())))
