"""A real S3-compatible server for the images tests: moto's server mode on loopback.

As s3fs's own tests do, the server is moto's ``ThreadedMotoServer`` (Werkzeug serving
moto's S3 implementation over HTTP) bound to 127.0.0.1 on a free port; dentalkit reaches
it through s3fs like any S3 endpoint. Nothing is patched. Credentials are the server's
dummy ones, passed as storage options (the environment is not touched).
"""

from __future__ import annotations

import logging
import uuid

import pytest


@pytest.fixture(scope="session")
def s3_server():
    """The endpoint URL of a moto S3 server that runs for the whole test session."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3(s3_server):
    """``(storage_options, bucket URL, s3fs filesystem)`` of a new, empty bucket."""
    import s3fs

    options = {
        "endpoint_url": s3_server,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "eu-west-1"},
    }
    fs = s3fs.S3FileSystem(**options)
    name = f"dk-{uuid.uuid4().hex[:12]}"
    fs.mkdir(name)
    return options, f"s3://{name}", fs
