"""http_async.py: the http loader under asyncio. Every callback runs on the
asyncio loop (POLL delivery); `fetch` loads without a cell, overlapping
calls of one URL share one request, and a status outside 2xx raises
HTTPStatusError with the server's response."""
import asyncio
import sys

import loadstate


async def main(base):
    async with loadstate.Runtime(loadstate.Delivery.POLL) as rt:
        http = rt.http_loader()
        sizes = [f"{base}/bytes/{n}" for n in (3, 5, 3)]
        responses = await asyncio.gather(*(http.fetch(url) for url in sizes))
        print("bodies:", [len(response.body) for response in responses])

        try:
            await http.fetch(f"{base}/status/404")
        except loadstate.HTTPStatusError as error:
            print("missing:", error.status, error.response.body)

        # A cell shows one request at a time, with its state.
        cell = rt.loadable(http)
        response = await cell.get(f"{base}/bytes/8")
        status = cell.snapshot().status.name
        print("cell:", status, response.status, len(response.body), "bytes")


asyncio.run(main(sys.argv[1]))
