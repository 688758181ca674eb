"""A moto S3-compatible server for the integration tests (started by tests/support/s3.rs).

Prints the port it listens on (127.0.0.1, chosen by the system) on the first line of stdout,
then serves until its standard input closes: the test process holds the other end of that
pipe, so the server stops with the test process however that ends.
"""

import sys

from moto.server import ThreadedMotoServer

server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print(server.get_host_and_port()[1], flush=True)
sys.stdin.read()
server.stop()
