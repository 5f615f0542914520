"""TLS: the client verifies the server certificate (the sandbox served over HTTPS with a
trustme certificate), fails clearly without the CA, and refuses plain HTTP to other hosts."""

from __future__ import annotations

import pytest

from dentalkit.errors import ConfigurationError, TransportError
from dentalkit.fetch.client import Client
from dentalkit.sandbox import running
from tests.reliability.cohort import add_figure

pytestmark = pytest.mark.slow

IMG = "https://images.example.org/T1/ceph.png"


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    trustme = pytest.importorskip("trustme")
    folder = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    ca.cert_pem.write_to_path(ca_file)
    cert.private_key_and_cert_chain_pem.write_to_path(cert_file)
    cert.private_key_pem.write_to_path(key_file)
    other = trustme.CA()  # an unrelated CA: must not be trusted for this server
    other_file = folder / "other-ca.pem"
    other.cert_pem.write_to_path(other_file)
    with running(tls=(str(cert_file), str(key_file))) as sb:
        yield sb, str(ca_file), str(other_file)


def test_client_succeeds_with_the_ca_configured(tls):
    sb, ca_file, _ = tls
    assert sb.base_url.startswith("https://127.0.0.1:")
    client = Client(sb.base_url, api_key=sb.api_key, cache="memory", verify=ca_file)
    res = client.ceph_lateral_points("T1", "2025-01-01", IMG)
    assert res.status_code == 200 and len(res.data["Results"]) == 169
    # by host name too (the certificate names both)
    by_name = sb.base_url.replace("127.0.0.1", "localhost")
    assert Client(by_name, api_key=sb.api_key, cache="memory", verify=ca_file).classifier("T1", "t", IMG).status_code == 200  # fmt: skip


@pytest.mark.parametrize("which", ["system store", "another CA"])
def test_client_refuses_a_certificate_it_cannot_verify(tls, which, monkeypatch):
    sb, _, other_file = tls
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    verify = True if which == "system store" else other_file
    # Retries are on: a certificate error must not be retried (it cannot heal).
    client = Client(sb.base_url, api_key=sb.api_key, cache="memory", verify=verify, max_retries=3)
    sent = []
    real_request = client._session.request
    monkeypatch.setattr(
        client._session, "request", lambda *a, **k: sent.append(1) or real_request(*a, **k)
    )
    before = sb.stats()["total"]
    with pytest.raises(TransportError, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify failed") as info:  # fmt: skip
        client.classifier("T1", "t", IMG)
    assert "SSLError" in str(info.value) and "/classifier" in str(info.value)
    assert "verify='ca.pem'" in str(info.value)  # says how to fix it
    assert len(sent) == 1  # one attempt, no retries
    assert sb.stats()["total"] == before  # no request got through
    add_figure("bad inputs tried", 1)


@pytest.mark.parametrize(
    "url",
    [
        "http://example.org/api/v2",
        "http://10.1.2.3/api/v2",
        "http://192.168.0.10:8080/api/v2",
        "http://[2001:db8::1]/api/v2",
        "HTTP://Example.org/api/v2",
    ],
)
def test_plain_http_to_a_non_loopback_host_is_refused(url):
    with pytest.raises(ConfigurationError, match="refusing plain http://"):
        Client(url, api_key="k", cache="memory")
    add_figure("bad inputs tried", 1)


@pytest.mark.parametrize(
    "url", ["ftp://example.org/api/v2", "file:///api/v2", "example.org/api/v2"]
)
def test_other_schemes_are_refused(url):
    with pytest.raises(ConfigurationError, match="not an http"):
        Client(url, api_key="k", cache="memory")
    add_figure("bad inputs tried", 1)


def test_plain_http_to_loopback_is_allowed():
    with running() as sb:
        assert sb.base_url.startswith("http://127.0.0.1:")
        Client(sb.base_url, api_key=sb.api_key, cache="memory").classifier("T1", "t", IMG)
