"""Client configuration: key, base URL, HTTPS-only rule, settings, repr and pickling."""

from __future__ import annotations

import inspect
import pickle

import pytest

import dentalkit.settings as settings
from dentalkit.endpoints import ENDPOINTS
from dentalkit.errors import ConfigurationError
from dentalkit.fetch._http import Secret, check_service_url, is_loopback
from dentalkit.fetch.client import Client, get_client

KEY = "sk-live-THIS-IS-THE-SECRET-0123456789"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv("DENTALKIT_API_KEY", raising=False)
    monkeypatch.delenv("DENTALKIT_BASE_URL", raising=False)
    monkeypatch.setattr(settings, "base_url", None)


def test_no_key_is_a_clear_configuration_error():
    with pytest.raises(ConfigurationError, match="DENTALKIT_API_KEY") as err:
        Client("https://svc.example.org/api/v2", cache="memory")
    assert "sandbox key that `dentalkit sandbox` prints" in str(err.value)
    assert "Client(" not in str(err.value)  # the user's words, not Python names (issue 23)


def test_no_base_url_is_a_clear_configuration_error():
    with pytest.raises(ConfigurationError, match="DENTALKIT_BASE_URL"):
        Client(api_key=KEY, cache="memory")


def test_defaults_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("DENTALKIT_API_KEY", KEY)
    monkeypatch.setenv("DENTALKIT_BASE_URL", "https://svc.example.org/api/v2/")
    client = Client(cache="memory")
    assert client.base_url == "https://svc.example.org/api/v2"
    assert client.spec.api_key.reveal() == KEY


def test_settings_are_read_at_call_time(monkeypatch):
    monkeypatch.setattr(settings, "base_url", "https://a.example.org/api/v2")
    monkeypatch.setattr(settings, "max_retries", 7)
    monkeypatch.setattr(settings, "timeout", (1.0, 2.0))
    client = Client(api_key=KEY, cache="memory")
    assert (client.base_url, client.spec.max_retries, client.spec.timeout) == (
        "https://a.example.org/api/v2",
        7,
        (1.0, 2.0),
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://svc.example.org/api/v2",
        "http://10.0.0.5/api/v2",
        "http://192.168.1.2:8080/api/v2",
        "http://[2001:db8::1]/api/v2",
        "http://localhost.evil.example.org/api/v2",
    ],
)
def test_plain_http_to_a_remote_host_is_refused_with_the_reason(url):
    with pytest.raises(ConfigurationError, match="TLS") as err:
        Client(url, api_key=KEY, cache="memory")
    assert KEY not in str(err.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8765/api/v2",
        "http://127.3.2.1/api/v2",
        "http://localhost:1/api/v2",
        "http://[::1]:9/api/v2",
        "https://svc.example.org/api/v2",
    ],
)
def test_https_and_loopback_http_are_accepted(url):
    assert Client(url, api_key=KEY, cache="memory").base_url == url


@pytest.mark.parametrize("url", ["ftp://svc.example.org/api/v2", "svc.example.org/api/v2", ""])
def test_non_http_urls_are_refused(url):
    with pytest.raises(ConfigurationError):
        check_service_url(url)


def test_base_url_must_carry_the_version_prefix():
    with pytest.raises(ConfigurationError, match="/api/v2"):
        Client("https://svc.example.org/api/v1", api_key=KEY, cache="memory")


def test_is_loopback():
    assert [is_loopback(h) for h in ("127.0.0.1", "::1", "[::1]", "localhost", "LOCALHOST")] == [
        True
    ] * 5
    assert not any(is_loopback(h) for h in ("10.0.0.1", "example.org", "::2", "", None))


def test_key_is_not_in_repr_str_or_pickled_spec_repr():
    client = Client("https://svc.example.org/api/v2", api_key=KEY, cache="memory")
    for text in (
        repr(client),
        str(client),
        repr(client.spec),
        str(client.spec),
        f"{client.spec.api_key}",
    ):
        assert KEY not in text
    assert repr(Secret(KEY)) == "Secret('***')"


def test_redis_password_is_not_in_repr():
    client_spec_cache = "redis://user:hunter2@cache.example.org:6379/0"
    from dentalkit.fetch._http import cache_description

    assert "hunter2" not in cache_description(client_spec_cache)
    assert cache_description(client_spec_cache) == "redis://cache.example.org:6379/0"


def test_client_pickles_through_its_spec_and_is_reused_per_process():
    client = Client("https://svc.example.org/api/v2", api_key=KEY, cache="memory")
    again = pickle.loads(pickle.dumps(client))
    assert again.spec == client.spec
    assert again is get_client(client.spec)  # one client per spec per process
    assert pickle.loads(pickle.dumps(client.spec)) == client.spec


def test_one_method_per_registry_endpoint_with_registry_signatures():
    for ep in ENDPOINTS.values():
        method = getattr(Client, ep.name)
        params = inspect.signature(method).parameters
        if ep.is_image:
            assert list(params)[1:4] == ["patient_id", "timestamp", "image_url"]
            assert {f.param for f in ep.optional_fields} <= set(params)
        else:
            assert [q.name for q in ep.query] == [p for p in params if p.startswith("p")]
        assert "refresh" in params
        assert ep.path in method.__doc__
