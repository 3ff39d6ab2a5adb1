"""A remote skill version's source (git, oci, zip): its type settled and its fields checked as MLflow's
registration does (``skill_registry.registration._resolve_remote_source`` and ``skill_content.sources``).

The server never fetches a source; it records what the client registered, as MLflow's server does.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from serverless_mlflow.core.errors import invalid

GIT, OCI, ZIP, MLFLOW = "git", "oci", "zip", "mlflow"
CLIENT_TYPES = (GIT, OCI, ZIP)
OCI_SCHEME = "oci://"
_GIT_SCHEME = "git://"
_MLFLOW_PREFIXES = ("mlflow-artifacts:/", "runs:/", "models:/")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
_SCP_GIT = re.compile(r"^(?:[\w.-]+@[\w.-]+|[\w-]+(?:\.[\w-]+)+):")
_UNSAFE = re.compile(r"[\s\x00-\x1f\x7f]")
MAX_FIELD_LENGTH = 2048
_ZIP_CREDENTIAL_PARAMETERS = frozenset(
    {
        "access_token",
        "googleaccessid",
        "sig",
        "signature",
        "token",
        "x-amz-credential",
        "x-amz-security-token",
        "x-amz-signature",
        "x-goog-credential",
        "x-goog-signature",
    }
)
_MAX_PATH_DEPTH = 128
_MAX_PATH_BYTES = 4096
_MAX_SEGMENT_BYTES = 255
_WINDOWS_INVALID = '<>"|?*'
_WINDOWS_RESERVED = frozenset({"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))})
_DOMAIN = r"(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])"
_REGISTRY = re.compile(rf"^(?:{_DOMAIN}(?:\.{_DOMAIN})*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{{1,5}})?$")
_SHA256 = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class Resolved:
    source_type: str
    source: str
    ref: str | None = None
    subpath: str | None = None


def _is_local_path(source: str) -> bool:
    if _WINDOWS_DRIVE.match(source):
        return True
    if "://" in source or source.startswith(_MLFLOW_PREFIXES):
        return False
    return not _SCP_GIT.match(source)


def _field_length(value: str, what: str) -> None:
    if len(value) > MAX_FIELD_LENGTH:
        raise invalid(f"{what} is {len(value)} characters long; the maximum is {MAX_FIELD_LENGTH}.")


def _remote_value(value: str, what: str) -> None:
    if value.startswith("-"):
        raise invalid(f"{what} must not start with '-': '{value}'.")
    if _UNSAFE.search(value):
        raise invalid(f"{what} must not contain whitespace or control characters.")
    _field_length(value, what)


def _git(url: str, ref: str | None) -> None:
    _remote_value(url, "Git URL")
    if "://" in url:
        parts = urlsplit(url)
        if parts.password or (parts.username and parts.scheme in ("http", "https")):
            raise invalid(
                "Git URL must not contain credentials; they would be stored with the skill version. Configure a "
                "credential helper and remove them from the URL."
            )
    if ref is not None:
        if not ref:
            raise invalid("Git ref must not be empty.")
        _remote_value(ref, "Git ref")


def _zip(url: str) -> None:
    _remote_value(url, "ZIP URL")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise invalid(f"ZIP source must be an http(s) URL, got '{url}'.")
    if parts.username or parts.password:
        raise invalid(
            "ZIP sources are fetched without authentication and must be publicly accessible; remove the credentials "
            "from the URL or use a Git or OCI source instead."
        )
    names = {name.lower() for name, _ in parse_qsl(parts.query, keep_blank_values=True)}
    if names & _ZIP_CREDENTIAL_PARAMETERS:
        raise invalid(
            "ZIP sources must be publicly accessible and must not contain credentials in the query string. Remove "
            "the signed query parameters or use a Git or OCI source instead."
        )


def _segment(segment: str, shown: str) -> None:
    if segment in (".", ".."):
        raise invalid(f"Path '{shown}' must not contain '.' or '..' segments.")
    if ":" in segment:
        raise invalid(f"Path '{shown}' must not contain ':' in a segment.")
    if any(ch in _WINDOWS_INVALID for ch in segment):
        raise invalid(f"Path '{shown}' contains a character Windows does not allow in names ({_WINDOWS_INVALID}).")
    if segment[-1] in " .":
        raise invalid(f"Path '{shown}' has a name ending in a space or period.")
    if any(ord(ch) < 32 or ch == "\x7f" for ch in segment):
        raise invalid(f"Path '{shown}' must not contain control characters.")
    try:
        encoded = segment.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid(f"Path '{shown}' is not valid UTF-8.") from None
    if max(len(encoded), len(unicodedata.normalize("NFC", segment).encode("utf-8"))) > _MAX_SEGMENT_BYTES:
        raise invalid(f"Path '{shown}' has a name longer than {_MAX_SEGMENT_BYTES} bytes.")
    if segment.split(".", 1)[0].upper() in _WINDOWS_RESERVED:
        raise invalid(f"Path '{shown}' uses a reserved Windows device name.")


def _canonical_relative_path(value: str) -> str | None:
    shown = value.encode("utf-8", "backslashreplace").decode("utf-8")
    if "\\" in value:
        raise invalid(f"Path '{shown}' must use forward slashes as separators.")
    if value.startswith("/"):
        raise invalid(f"Path '{shown}' must be relative to the content root.")
    parts = [part for part in value.split("/") if part != ""]
    if len(parts) > _MAX_PATH_DEPTH:
        raise invalid(f"Path '{shown}' is nested deeper than {_MAX_PATH_DEPTH} directories.")
    raw = len(value.encode("utf-8", "surrogatepass"))
    nfc = len(unicodedata.normalize("NFC", value).encode("utf-8", "surrogatepass"))
    if max(raw, nfc) > _MAX_PATH_BYTES:
        raise invalid(f"Path '{shown}' is longer than {_MAX_PATH_BYTES} bytes.")
    for part in parts:
        _segment(part, value)
    return "/".join(parts) if parts else None


def normalize_subpath(subpath: str | None) -> str | None:
    if subpath is None:
        return None
    value = subpath.strip()
    if value == "":
        return None
    try:
        normalized = _canonical_relative_path(value)
    except Exception as error:  # an MlflowError: MLflow rewraps its message
        raise invalid(f"Subpath '{subpath}' is invalid: {getattr(error, 'message', error)}") from None
    if normalized is not None:
        _field_length(normalized, "Subpath")
    return normalized


def _infer(source: str) -> tuple[str, str]:
    if source.startswith(OCI_SCHEME):
        image = source.removeprefix(OCI_SCHEME)
        if not image:
            raise invalid("OCI source must include an image reference after 'oci://'.")
        return OCI, image
    if source.startswith(_MLFLOW_PREFIXES):
        return MLFLOW, source
    if source.startswith(_GIT_SCHEME):
        return GIT, source
    path = urlsplit(source).path
    if path.endswith(".git") or path.endswith(".git/"):
        return GIT, source
    if path.endswith(".zip"):
        return ZIP, source
    raise invalid(
        f"Cannot infer the source type of '{source}'. Pass a typed source (GitSource, OCISource, or ZipSource) or use "
        "a URL that ends in '.git' or '.zip', or starts with 'git://' or 'oci://'."
    )


def _inside_mlflow(source: Any) -> Exception:
    return invalid(
        f"'source' {source!r} names content inside MLflow; a remote source must be a git, oci, or zip location. "
        "Upload local content instead of pointing at it."
    )


def _check_image(image: str) -> None:
    """``parse_image_reference``'s refusals (the server only checks the shape; it never pulls)."""
    value = image.strip()
    if not value:
        raise invalid("OCI image reference must not be empty.")
    if "@" in value:
        name, reference = value.split("@", 1)
        if _SHA256.match(reference) is None:
            raise invalid(f"OCI image digest in '{image}' must be a sha256 digest of 64 hex characters, got {reference!r}.")
        head, _, tail = name.rpartition("/")
        tail = tail.split(":", 1)[0]
        name = f"{head}/{tail}" if head else tail
    else:
        head, _, tail = value.rpartition("/")
        reference = "latest"
        if ":" in tail:
            tail, reference = tail.split(":", 1)
        name = f"{head}/{tail}" if head else tail
    if not name:
        raise invalid(f"OCI image reference '{image}' has no repository.")
    first, _, rest = name.partition("/")
    registry, repository = (
        (first.lower(), rest) if rest and ("." in first or ":" in first or first.lower() == "localhost") else ("docker.io", name)
    )
    if not repository or not reference or "" in repository.split("/"):
        raise invalid(f"OCI image reference '{image}' is malformed.")
    if _REGISTRY.match(registry) is None:
        raise invalid(f"OCI image reference '{image}' has an invalid registry host.")


def _type_named_by_scheme(source: str) -> str | None:
    lowered = source.strip().lower()
    if lowered.startswith(OCI_SCHEME):
        return OCI
    if lowered.startswith(_GIT_SCHEME):
        return GIT
    return None


def resolve(source: Any, source_type: str | None, ref: str | None, subpath: str | None) -> Resolved:
    """``_resolve_remote_source``: the settled type, pointer, ref and subpath of a registration."""
    if isinstance(source, str) and source.strip().lower().startswith(_MLFLOW_PREFIXES):
        raise _inside_mlflow(source)
    if not isinstance(source, str) or (source_type != OCI and _is_local_path(source.strip())):
        raise invalid(
            f"'source' must be a remote git, oci, or zip location, got {source!r}. The server never reads a path on "
            "its own filesystem; local content is uploaded instead."
        )
    if source_type is None:
        if not source.strip():
            raise invalid("Skill source must be a typed source or a non-empty string.")
        value = source.strip()
        normalized = normalize_subpath(subpath)
        kind, pointer = _infer(value)
        if ref is not None and kind != GIT:
            raise invalid("'ref' applies to Git sources only.")
        if kind == GIT:
            _git(pointer, ref)
        elif kind == ZIP:
            _zip(pointer)
        else:
            _remote_value(pointer, "Source")
        if kind not in CLIENT_TYPES:
            raise _inside_mlflow(source)
        resolved = Resolved(kind, pointer, ref, normalized)
    else:
        if source_type not in CLIENT_TYPES:
            raise invalid(f"Unknown 'source_type' {source_type!r}; expected one of {list(CLIENT_TYPES)}.")
        scheme_type = _type_named_by_scheme(source)
        if scheme_type is not None and scheme_type != source_type:
            raise invalid(f"'source_type' {source_type!r} contradicts the {scheme_type!r} scheme of 'source' {source!r}.")
        if source_type != GIT and ref is not None:
            raise invalid("'ref' applies to git sources only.")
        normalized = normalize_subpath(subpath)
        if source_type == GIT:
            _git(source, ref)
            resolved = Resolved(GIT, source, ref, normalized)
        elif source_type == OCI:
            image = source.removeprefix(OCI_SCHEME)
            if not image:
                raise invalid("OCISource image reference must not be empty.")
            _remote_value(image, "OCI image reference")
            resolved = Resolved(OCI, image, None, normalized)
        else:
            _zip(source)
            resolved = Resolved(ZIP, source, None, normalized)
    if resolved.source_type == OCI:
        _check_image(resolved.source)
    return resolved
