"""Folders and object stores through fsspec: list, read, upload, presign (private; I/O).

A location is a local folder or an object-store prefix: ``s3://bucket/prefix``
(s3fs), ``gs://bucket/prefix`` (gcsfs), ``az://container/prefix`` or ``abfs://…``
(adlfs). Local folders are read with the standard library, so they need no extra; object
stores need fsspec and the store's filesystem package (``dentalkit[images]`` for S3,
``dentalkit[gcs]``, ``dentalkit[azure]``). Credentials come from where each package reads
them (environment, config files, instance roles) or from ``storage_options``; dentalkit
never stores or prints them.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dentalkit.errors import ConfigurationError, InputError, MissingDependencyError, require

__all__ = ["Location", "check_https", "open_location"]

#: URL scheme → (protocol family, filesystem package, dentalkit extra).
_SCHEMES = {
    "s3": ("s3", "s3fs", "images"),
    "s3a": ("s3", "s3fs", "images"),
    "gs": ("gs", "gcsfs", "gcs"),
    "gcs": ("gs", "gcsfs", "gcs"),
    "az": ("az", "adlfs", "azure"),
    "abfs": ("az", "adlfs", "azure"),
    "abfss": ("az", "adlfs", "azure"),
}


@dataclass
class Location:
    """A folder or an object-store prefix, as given (``url``) and as its filesystem sees it."""

    url: str
    protocol: str  # "file", "s3", "gs" or "az"
    root: str  # absolute folder, or "bucket/prefix" without the scheme
    fs: Any = None  # the fsspec filesystem of an object store

    @property
    def is_local(self) -> bool:
        return self.protocol == "file"

    def path(self, rel: str) -> str:
        """The full path of ``rel`` (a path relative to the location, '/'-separated)."""
        if self.is_local:
            return str(Path(self.root, *rel.split("/")))
        return f"{self.root}/{rel}" if self.root else rel

    def list_files(self) -> list[str]:
        """Every file under the location, relative to it, '/'-separated, sorted."""
        if self.is_local:
            root = Path(self.root)
            if not root.is_dir():
                raise InputError(f"{self.url} is not a folder")
            found = []
            for folder, _dirs, files in os.walk(root):
                base = Path(folder).relative_to(root).as_posix()
                found += [f if base == "." else f"{base}/{f}" for f in files]
            return sorted(found)
        try:
            paths = self.fs.find(self.root, detail=False)
        except Exception as exc:
            raise _store_error("list", self.url, exc) from None
        cut = len(self.root) + 1 if self.root else 0
        return sorted(p[cut:] for p in paths if p.startswith(self.root) and len(p) > cut)

    def sizes(self) -> dict[str, int]:
        """Size of every file under an object-store location, by relative path."""
        try:
            found = self.fs.find(self.root, detail=True)
        except FileNotFoundError:
            return {}
        except Exception as exc:
            raise _store_error("list", self.url, exc) from None
        cut = len(self.root) + 1
        return {p[cut:]: int(info.get("size") or 0) for p, info in found.items()}

    def read(self, rels: Sequence[str]) -> dict[str, bytes | Exception]:
        """The bytes of each file (or the exception reading it raised), by relative path."""
        if self.is_local:
            out: dict[str, bytes | Exception] = {}
            for rel in rels:
                try:
                    out[rel] = Path(self.path(rel)).read_bytes()
                except OSError as exc:
                    out[rel] = exc
            return out
        full = [self.path(r) for r in rels]
        got = self.fs.cat(full, on_error="return") if full else {}
        return {r: got.get(p, FileNotFoundError(p)) for r, p in zip(rels, full, strict=True)}

    def upload(self, files: Sequence[tuple[str, str]]) -> int:
        """Copy local files to the location: ``(local path, relative key)`` pairs.

        A key that already holds a file of the same size is skipped (keys carry a content
        hash, so a rerun uploads nothing twice). Returns the number of files sent.
        """
        present = self.sizes()
        todo = [(lp, rel) for lp, rel in files if present.get(rel) != os.path.getsize(lp)]
        if todo:
            try:
                self.fs.put([lp for lp, _ in todo], [self.path(rel) for _, rel in todo])
            except Exception as exc:
                raise _store_error("upload to", self.url, exc) from None
        return len(todo)

    def presign(self, rels: Sequence[str], lifetime: timedelta) -> list[str]:
        """A presigned HTTPS GET URL for each file, valid for ``lifetime``."""
        seconds = int(lifetime.total_seconds())
        paths = [self.path(r) for r in rels]
        try:
            # one call per key: gathering s3fs's async _url in batches measured 2-8 times slower
            return [self.fs.sign(p, expiration=seconds) for p in paths]
        except NotImplementedError:
            raise InputError(
                f"{self.url}: this store's filesystem cannot presign URLs; use s3://, gs:// "
                "or az://"
            ) from None
        except Exception as exc:
            raise _store_error("presign URLs in", self.url, exc) from None


def _store_error(what: str, url: str, exc: Exception) -> InputError | ConfigurationError:
    """A one-line error naming the store and what failed (never credentials)."""
    name = type(exc).__name__
    text = str(exc).splitlines()[0][:300] if str(exc) else name
    if name in ("NoCredentialsError", "PartialCredentialsError", "DefaultCredentialsError"):
        return ConfigurationError(
            f"could not {what} {url}: no credentials for the store ({text}); set them as the "
            "store's tools expect (e.g. AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or a "
            "profile for S3) or pass storage_options"
        )
    if isinstance(exc, FileNotFoundError):
        return InputError(f"could not {what} {url}: not found ({text})")
    if isinstance(exc, PermissionError):
        return ConfigurationError(f"could not {what} {url}: access denied ({text})")
    return InputError(f"could not {what} {url}: {name}: {text}")


def open_location(
    location: str | os.PathLike, storage_options: Mapping[str, Any] | None = None
) -> Location:
    """Open a local folder or an object-store prefix.

    ``s3://`` presigns with AWS Signature Version 4 (``config_kwargs={"signature_version":
    "s3v4"}``, unless ``storage_options`` sets one): the older version 2 is refused by
    newer AWS regions.
    """
    text = os.fspath(location)
    if not isinstance(text, str) or not text:
        raise InputError(f"not a folder or object-store URL: {location!r}")
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme in ("", "file"):
        root = text[len("file://") :] if scheme else text
        return Location(text, "file", str(Path(root).expanduser().resolve()))
    if scheme not in _SCHEMES:
        raise InputError(
            f"{text}: unsupported scheme {scheme}://; use a local folder, s3://, gs:// or az://"
        )
    protocol, package, extra = _SCHEMES[scheme]
    fsspec = require("fsspec", extra)
    options = dict(storage_options or {})
    if protocol == "s3":
        config = dict(options.get("config_kwargs") or {})
        config.setdefault("signature_version", "s3v4")
        options["config_kwargs"] = config
    try:
        fs, root = fsspec.core.url_to_fs(text, **options)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{text} needs {package}; install it with: pip install 'dentalkit[{extra}]'"
        ) from exc
    except Exception as exc:
        raise _store_error("open", text, exc) from None
    root = root.rstrip("/")
    if not root:
        raise InputError(f"{text}: name a bucket (and a prefix), e.g. {scheme}://my-bucket/study")
    return Location(text, protocol, root, fs)


def _loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_https(urls: Sequence[str], store: str) -> None:
    """Refuse presigned URLs the service would fetch over plain HTTP (loopback excepted)."""
    for url in urls[:1]:
        parts = urlsplit(url)
        if parts.scheme == "https" or (parts.scheme == "http" and _loopback(parts.hostname)):
            continue
        raise ConfigurationError(
            f"{store}: the presigned URLs are {parts.scheme}://{parts.hostname}/…; the "
            "service would download patient images unencrypted. Use the store's https "
            "endpoint (storage_options endpoint_url=https://…)"
        )
