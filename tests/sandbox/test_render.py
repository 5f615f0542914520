"""Synthetic input images and annotated output images."""

import io

import pytest

from dentalkit.endpoints import get_endpoint, image_endpoints
from dentalkit.errors import InputError
from dentalkit.sandbox.simulate import respond

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

from dentalkit.sandbox.render import (  # noqa: E402
    IMAGE_KINDS,
    IMAGE_SPECS,
    default_image_kind,
    input_image,
    output_image,
)


def _decode(png: bytes) -> Image.Image:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    img = Image.open(io.BytesIO(png))
    img.load()
    return img


@pytest.mark.parametrize("kind", sorted(IMAGE_KINDS))
def test_input_image_decodes_with_documented_size_and_is_deterministic(kind):
    path = f"{kind}/P-render/2024-05-01.png"
    png = input_image(path)
    img = _decode(png)
    assert img.size == (IMAGE_SPECS[kind].width, IMAGE_SPECS[kind].height)
    assert input_image(path) == png
    # not a blank canvas: something was drawn
    lo, hi = img.convert("L").getextrema()
    assert hi - lo > 50


def test_input_images_differ_between_patients():
    assert input_image("pano/A/2024-01-01.png") != input_image("pano/B/2024-01-01.png")


@pytest.mark.parametrize("path", ["pano/x.png", "nope/P/s.png", "pano/P/s.jpg", "pano//s.png"])
def test_bad_paths_are_input_errors(path):
    with pytest.raises(InputError):
        input_image(path)


@pytest.mark.parametrize(
    "ep", [e for e in image_endpoints() if e.output_image], ids=lambda e: e.name
)
def test_output_image_draws_the_response(ep):
    kind = default_image_kind(ep)
    url = f"http://127.0.0.1:9/_sandbox/images/{kind}/P-render/2024-05-01.png"
    req = {
        "PatientID": "P-render",
        "TimeStamp": "2024-05-01",
        "ImageName": url,
        "DrawContours": True,
    }
    body = respond(ep, req)
    png = output_image(ep, req, body)
    img = _decode(png)
    assert img.size == (IMAGE_SPECS[kind].width, IMAGE_SPECS[kind].height)
    assert output_image(ep, req, body) == png
    plain = _decode(input_image(f"{kind}/P-render/2024-05-01.png")).convert("RGB")
    if body.get("Results") == {}:
        return  # nothing to draw (e.g. a clean panoramic image)
    assert img.convert("RGB").tobytes() != plain.tobytes()


def test_no_output_image_for_classifier_and_tmj():
    req = {"PatientID": "P", "TimeStamp": "t", "ImageName": "https://x/y.png"}
    for slug in ("classifier", "tmj-xsectional"):
        ep = get_endpoint(slug)
        with pytest.raises(InputError, match="no output image"):
            output_image(ep, req, respond(ep, req))
