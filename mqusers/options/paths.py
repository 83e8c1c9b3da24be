"""Option values that name files: a CA or client certificate to read, a report to write later, a secret read now.

Each checks the path once, when the settings are read, so a bad one stops the run before any load.
"""

from __future__ import annotations

import os
import ssl

from mqusers.options.parsing import OptionError


def _readable(path: str, option: str, what: str) -> str:
    if not os.access(path, os.R_OK) or not os.path.isfile(path):
        raise OptionError(f"{option}: cannot read {path!r}; give {what}")
    return path


def parse_ca_file(path: str, option: str) -> str:
    return _readable(path, option, "a PEM file of the CA that signed the broker")


def parse_cert_file(path: str, option: str) -> str:
    return _readable(path, option, "the client's PEM certificate (its key in the same file or --mq-key-file)")


def parse_key_file(path: str, option: str) -> str:
    return _readable(path, option, "the PEM private key (unencrypted) of --mq-cert-file")


def check_client_certificate(cert_file: str | None, key_file: str | None) -> None:
    """The client certificate and its key load together (an encrypted key is refused, never prompted for)."""
    if cert_file is None:
        if key_file is not None:
            raise OptionError("--mq-key-file: needs --mq-cert-file, the certificate it is the key of")
        return
    try:
        ssl.create_default_context().load_cert_chain(cert_file, key_file, password=b"")
    except (ssl.SSLError, OSError) as error:
        reason = getattr(error, "reason", None) or error.strerror or str(error)
        raise OptionError(f"--mq-cert-file: cannot load {cert_file!r} with its key ({reason})") from None


def writable_file(path: str, option: str) -> str:
    """``path``, if a file can be written there later; checked without creating or truncating it."""
    folder = os.path.dirname(os.path.abspath(path))
    if path.endswith(os.sep) or os.path.isdir(path):
        problem = "it names a folder"
    elif os.path.exists(path):
        problem = "" if os.path.isfile(path) and os.access(path, os.W_OK) else "not a writable regular file"
    elif not os.path.isdir(folder):
        problem = "no such folder"
    else:
        problem = "" if os.access(folder, os.W_OK | os.X_OK) else "the folder is not writable"
    if problem:
        raise OptionError(f"{option}: cannot write {path!r}: {problem}; give a file in a writable folder")
    return path


def writable_folder(path: str, option: str) -> str:
    """``path``, if it is a writable folder or one can be made there later (its nearest existing parent is)."""
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        problem = "not a folder" if existing == os.path.abspath(path) else f"{existing!r} is not a folder"
    else:
        problem = "" if os.access(existing, os.W_OK | os.X_OK) else f"{existing!r} is not writable"
    if problem:
        raise OptionError(f"{option}: cannot write into {path!r}: {problem}; give a writable folder")
    return path


def read_secret_file(path: str, option: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError as error:
        raise OptionError(f"{option}: cannot read {path!r}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise OptionError(f"{option}: {path!r} is not UTF-8 text; save the secret as UTF-8") from None
