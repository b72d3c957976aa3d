"""SHA-256 and BLAKE2b, the hashes the on-disk cache and the content-derived codes use, without ``hashlib``:
importing it loads OpenSSL's bindings, several milliseconds of a cache hit, while CPython's own implementations
are built in. Where they are not, hashlib's."""

try:
    from _sha256 import sha256  # CPython 3.11
except ImportError:
    try:
        from _sha2 import sha256  # CPython 3.12+
    except ImportError:
        from hashlib import sha256
try:
    from _blake2 import blake2b
except ImportError:
    from hashlib import blake2b

__all__ = ["blake2b", "sha256"]
