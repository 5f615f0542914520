"""Own sandboxes (faults change per test) and client factories: see tests/loopback_fixtures.py."""

from tests.loopback_fixtures import fresh, make_client, sb  # noqa: F401
