"""SFTP from a second client library (asyncssh): what OpenSSH's sftp cannot send on cue
(many handles at once, malformed and unknown requests), and the shell of the same
connection seeing what SFTP wrote and back. Prints one JSON object."""
import asyncio, json, struct, sys

import asyncssh

PORT = int(sys.argv[1])


async def connect():
    return await asyncssh.connect(
        "127.0.0.1", port=PORT, username="agent", password="any",
        known_hosts=None, client_keys=None, agent_path=None)


async def handles():
    async with await connect() as conn:
        await conn.run("printf 'from shell\\n' > s.txt", check=False)
        async with conn.start_sftp_client() as sftp:
            async with sftp.open("s.txt", "rb") as f:
                shell_text = (await f.read()).decode()
            async with sftp.open("v.txt", "w") as f:
                await f.write("from sftp\n")
            opened, refused = [], None
            for i in range(1000):
                try:
                    opened.append(await sftp.open("s.txt", "rb"))
                except asyncssh.SFTPError as e:
                    refused = [i, e.code, e.reason]
                    break
            for f in opened:
                await f.close()
            async with sftp.open("s.txt", "rb") as f:
                after = (await f.read()).decode()
        back = await conn.run("cat v.txt", check=False)
        return {"shell_text": shell_text, "refused": refused, "after": after,
                "back": back.stdout}


async def prefetch():
    """Many large reads in flight at once, far more than the channel's window holds (the
    way paramiko and asyncssh fetch): the server must keep taking requests while it
    waits to send answers."""
    import hashlib, os, tempfile
    async with await connect() as conn:
        made = await conn.run(
            "head -c 41943040 /dev/urandom > big && sha256sum big", check=False)
        with tempfile.TemporaryDirectory() as tmp:
            local = os.path.join(tmp, "big")
            async with conn.start_sftp_client() as sftp:
                await asyncio.wait_for(
                    sftp.get("big", local, block_size=65536, max_requests=512), 300)
            with open(local, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        return {"shell": made.stdout.split()[0], "got": digest}


def packet(body):
    return struct.pack(">I", len(body)) + body


def string(b):
    return struct.pack(">I", len(b)) + b


async def read_reply(stdout):
    (n,) = struct.unpack(">I", await asyncio.wait_for(stdout.readexactly(4), 30))
    body = await asyncio.wait_for(stdout.readexactly(n), 30)
    kind = body[0]
    if kind != 101:
        return [kind]
    rid, code = struct.unpack(">II", body[1:9])
    (mlen,) = struct.unpack(">I", body[9:13])
    return [kind, rid, code, body[13:13 + mlen].decode()]


async def bad_packets():
    async with await connect() as conn:
        proc = await conn.create_process(subsystem="sftp", encoding=None)
        out = {}
        proc.stdin.write(packet(b"\x01" + struct.pack(">I", 3)))
        out["version"] = await read_reply(proc.stdout)
        proc.stdin.write(packet(bytes([250]) + struct.pack(">I", 7) + b"junk"))
        out["unknown_type"] = await read_reply(proc.stdout)
        proc.stdin.write(packet(b"\xc8" + struct.pack(">I", 8) + string(b"nope@example.com")))
        out["unknown_extension"] = await read_reply(proc.stdout)
        proc.stdin.write(packet(b"\x03" + struct.pack(">I", 9) + b"\x00\x00"))
        out["truncated"] = await read_reply(proc.stdout)
        proc.stdin.write(packet(b"\xc8" + struct.pack(">I", 10) + string(b"hardlink@openssh.com")
                                + string(b"/README.md") + string(b"/hard")))
        out["hardlink"] = await read_reply(proc.stdout)
        # A length no request can have: the server ends the subsystem.
        proc.stdin.write(struct.pack(">I", 1 << 30) + b"x" * 64)
        rest = await asyncio.wait_for(proc.stdout.read(), 30)
        out["after_oversized"] = len(rest)
        alive = await conn.run("echo alive", check=False)
        out["alive"] = alive.stdout
        return out


print(json.dumps(asyncio.run(globals()[sys.argv[2]]())))
