"""Option values that name files: a CA file to read, a report file to write later, a secret read now.

Each checks the path once, when the settings are read, so a bad one stops the run before any load.
"""

from __future__ import annotations

import os

from mqusers.options.parsing import OptionError


def parse_ca_file(path: str, option: str) -> str:
    if not os.access(path, os.R_OK) or not os.path.isfile(path):
        raise OptionError(f"{option}: cannot read {path!r}; give a PEM file of the CA that signed the broker")
    return path


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


def read_secret_file(path: str, option: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError as error:
        raise OptionError(f"{option}: cannot read {path!r}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise OptionError(f"{option}: {path!r} is not UTF-8 text; save the secret as UTF-8") from None
