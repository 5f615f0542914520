"""The sandbox's connections send small responses at once (TCP_NODELAY).

Without TCP_NODELAY on the accepted connections, Nagle's algorithm holds the body of a
response (written after its headers) until the client's delayed ACK: every keep-alive
request after the first then waits ~40 ms. The check reads the socket option of the live
server-side connection rather than timing requests.
"""

from __future__ import annotations

import socket

import requests


def test_keep_alive_connections_have_tcp_nodelay(sandbox):
    with requests.Session() as http:
        for _ in range(2):  # the same keep-alive connection twice
            http.get(sandbox.image_url("tmj", "P1", "2024-01-01"), timeout=10)
        states = sandbox._server.server_state.connections
        assert states, "no live connection seen by the server"
        for protocol in states:
            sock = protocol.transport.get_extra_info("socket")
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
