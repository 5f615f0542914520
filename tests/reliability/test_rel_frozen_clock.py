"""The sandbox's frozen clock (``frozen_time``): output links do not depend on when a request
is answered, so runs can be compared byte for byte."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import requests

from dentalkit.fetch.client import Client
from dentalkit.sandbox import running

IMG = "https://images.example.org/C1/pano.png"


def test_frozen_time_fixes_link_expiry_and_can_be_set_over_http():
    with running() as sb:
        client = Client(sb.base_url, api_key=sb.api_key, cache="memory")
        put = requests.put(
            sb.root_url + "/_sandbox/config",
            json={"frozen_time": 1_800_000_000},
            headers={"x-api-key": sb.api_key},
            timeout=10,
        )
        assert put.status_code == 200 and put.json()["frozen_time"] == 1_800_000_000
        a = client.pano_segmentation("C1", "t", IMG, refresh=True)
        time.sleep(1.1)  # the wall clock moves on; the sandbox's does not
        b = client.pano_segmentation("C1", "t", IMG, refresh=True)
        assert a.text == b.text
        expires = parse_qs(urlsplit(a.data["OutputImageUrl"]).query)["expires"]
        assert expires == [str(1_800_000_000 + 72 * 3600)]  # issue time + 72 h
        # clock_offset still applies on top; None goes back to the wall clock
        sb.config.update({"clock_offset": 10.0})
        c = client.pano_segmentation("C1", "t", IMG, refresh=True)
        assert parse_qs(urlsplit(c.data["OutputImageUrl"]).query)["expires"] == [
            str(1_800_000_010 + 72 * 3600)
        ]
        sb.config.update({"frozen_time": None, "clock_offset": 0.0})
        assert abs(sb.config.now() - time.time()) < 5
