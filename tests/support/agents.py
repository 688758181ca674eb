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
    async with await connect() as conn:
        proc = await conn.create_process("echo started; sleep 100; echo never")
        first = await asyncio.wait_for(proc.stdout.readline(), 30)
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


print(json.dumps(asyncio.run(globals()[sys.argv[2]]())))
