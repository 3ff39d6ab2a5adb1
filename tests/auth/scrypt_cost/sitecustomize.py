"""Loaded by MLflow's own basic-auth servers in the tests (their PYTHONPATH names this directory): new password
hashes use scrypt with ``AUTH_SCRYPT_N`` (tests/conftest.py sets it, as for our runtime) instead of werkzeug's
N=32768. Still werkzeug's real scrypt hash and check (a check reads the cost stored with the hash, so a wrong
password is refused as before); a check costs ~4 ms instead of ~0.2 s, and every step of the auth scenarios checks one.
Only werkzeug 3's default (scrypt) is replaced; an older werkzeug keeps its own."""

import os

import werkzeug.security

_defaults = werkzeug.security.generate_password_hash.__defaults__
if os.environ.get("AUTH_SCRYPT_N") and _defaults and _defaults[0] == "scrypt":
    werkzeug.security.generate_password_hash.__defaults__ = (f"scrypt:{int(os.environ['AUTH_SCRYPT_N'])}:8:1", *_defaults[1:])
