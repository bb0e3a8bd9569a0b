"""A TCP proxy that delays every byte by a fixed time each way: a PostgreSQL server "on the
network" for benches that run it on this machine (bench/pg_writers.py --delay-ms).

    python bench/delay_proxy.py --to 127.0.0.1:5432 --delay-ms 0.5   # prints the port

Each chunk read from one side is written to the other `delay` after it arrived, in order, so
the round trip grows by twice the delay while pipelined messages stay in flight together, as
on a real link (a proxy that slept before each forward would serialize them). The proxy
runs until it is killed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copy reader to writer, each chunk `delay` seconds after it was read."""
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def send() -> None:
        while True:
            due, data = await queue.get()
            if not data:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(send())
    try:
        while data := await reader.read(65536):
            queue.put_nowait((time.monotonic() + delay, data))
    except ConnectionError:
        pass
    queue.put_nowait((0.0, b""))
    await sender


async def serve(target: tuple[str, int], delay: float) -> None:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(*target)
        await asyncio.gather(
            pump(client_r, server_w, delay), pump(server_r, client_w, delay), return_exceptions=True
        )

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--to", required=True, help="host:port of the server")
    parser.add_argument("--delay-ms", type=float, required=True, help="added each way")
    args = parser.parse_args()
    host, _, port = args.to.rpartition(":")
    try:
        asyncio.run(serve((host, int(port)), args.delay_ms / 1000))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
