"""Hypothesis without deadlines: a first example that loads a compiled kernel, a busy CI host
or interpreted kernels (NEARDUP_KERNELS=python) make timings vary, and speed is measured in
benchmarks/, never in unit tests. The S3 server cluster tests read and write (moto)."""

from collections.abc import Iterator

import pytest
from hypothesis import settings

settings.register_profile("neardup", deadline=None)
settings.load_profile("neardup")


@pytest.fixture(scope="session")
def s3() -> Iterator[dict[str, object]]:
    """A moto S3 server on a free loopback port; the storage options that reach it (each test
    module uses buckets of its own)."""
    pytest.importorskip("s3fs")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield {"endpoint_url": f"http://{host}:{port}", "key": "testing", "secret": "testing"}
    server.stop()
