"""Digests that let ``scriptc.load`` refuse a damaged library instead of running it.

The manifest (``.scriptc_manifest``) carries ``"digests": {"code": ..., "manifest": ...}``: the SHA-256 of the
whole file except the manifest section (the machine code, its data, the symbol and section tables), and the
SHA-256 of the manifest section itself with its own digest zeroed. ``scriptc export`` links the library with
both zeroed, then computes them and writes them in place (same length: no offset moves). ``load`` recomputes
both before loading: a flipped byte in the code, or a manifest edited to call other functions, is a
``LoadError``. This guards against damage (a bad copy, a truncated download, an edit by mistake), not against
someone who can rewrite the file and its digests alike.
"""

from __future__ import annotations

import hashlib
import struct

ZERO = "0" * 64
PLACEHOLDER = {"code": ZERO, "manifest": ZERO}


def section_span(data: bytes, name: str) -> tuple[int, int] | None:
    """(offset, size) of the ELF section ``name`` in a 64-bit little-endian ELF file, or None."""
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
    names_at = sections[shstrndx][4]
    for name_at, _, _, _, offset, size, *_ in sections:
        end = data.index(b"\0", names_at + name_at)
        if data[names_at + name_at : end].decode() == name:
            return offset, size
    return None


def _digests_text(code: str, manifest: str) -> bytes:
    import json

    return json.dumps({"code": code, "manifest": manifest}).encode()


def code_digest(data: bytes, span: tuple[int, int]) -> str:
    offset, size = span
    h = hashlib.sha256(data[:offset])
    h.update(data[offset + size :])
    return h.hexdigest()


def manifest_digest(section: bytes, code: str) -> str:
    """The digest of the manifest section with its own digest zeroed (``code``: the code digest in it)."""
    return hashlib.sha256(
        section.replace(_digests_text(code, _current_manifest(section)), _digests_text(code, ZERO), 1)
    ).hexdigest()


def _current_manifest(section: bytes) -> str:
    import json

    return json.loads(section.rstrip(b"\0")).get("digests", {}).get("manifest", ZERO)


def seal(path, section_name: str) -> None:
    """Write the digests into a freshly linked library (whose manifest holds ``PLACEHOLDER``)."""
    data = bytearray(open(path, "rb").read())
    offset, size = section_span(bytes(data), section_name)
    section = bytes(data[offset : offset + size])
    zeroed = _digests_text(ZERO, ZERO)
    at = section.index(zeroed)
    code = code_digest(bytes(data), (offset, size))
    half = section[:at] + _digests_text(code, ZERO) + section[at + len(zeroed) :]
    sealed = section[:at] + _digests_text(code, hashlib.sha256(half).hexdigest()) + section[at + len(zeroed) :]
    data[offset : offset + size] = sealed
    with open(path, "wb") as f:
        f.write(data)


def reseal(path, section_name: str) -> None:
    """Write the digests of a library's present bytes (for tests that edit a library on purpose)."""
    import json

    data = open(path, "rb").read()
    offset, size = section_span(data, section_name)
    section = data[offset : offset + size]
    digests = json.loads(section.rstrip(b"\0"))["digests"]
    zeroed = section.replace(_digests_text(digests["code"], digests["manifest"]), _digests_text(ZERO, ZERO), 1)
    with open(path, "wb") as f:
        f.write(data[:offset] + zeroed + data[offset + size :])
    seal(path, section_name)


def damage(data: bytes, section_name: str, manifest: dict) -> str | None:
    """What is wrong with a library's bytes against its manifest's digests, or None."""
    digests = manifest.get("digests")
    if not isinstance(digests, dict):
        return "its manifest has no digests"
    span = section_span(data, section_name)
    offset, size = span
    if code_digest(data, span) != digests.get("code"):
        return "its code does not match the digest its manifest records"
    if manifest_digest(data[offset : offset + size], digests.get("code", "")) != digests.get("manifest"):
        return "its manifest was changed after export"
    return None


__all__ = ["PLACEHOLDER", "damage", "reseal", "seal"]
