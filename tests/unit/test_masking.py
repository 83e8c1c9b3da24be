"""No credential in a URL ever shows in an OptionError line."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqusers.options.parsing import OptionError, mask_userinfo, parse_broker_url
from mqusers.sinks.sinkoptions import read_influx_settings


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("http://user:SECRET@127.0.0.1:61613", "http://***@127.0.0.1:61613"),
        ("stomp+ssl://:SECRET@h:1", "stomp+ssl://***@h:1"),
        ("user:SECRET@h:1", "***@h:1"),
        ("http://u:SE@CR/ET@h:1", "http://***@h:1"),  # a password holding '@' and '/'
        ("u:SE://CRET@h:1", "***@h:1"),  # '://' inside the password is no scheme
        ("stomp://a:1,stomp://u:SE,CRET@b:2", "stomp://***@b:2"),  # a password holding ','
        ("stomp://a:1,stomp://b:2", "stomp://a:1,stomp://b:2"),
    ],
)
def test_mask_userinfo(url: str, masked: str) -> None:
    assert mask_userinfo(url) == masked


# Characters that end a URL's parts early (or split the failover list), so a naive mask would
# leave part of the password in the message.
_TRICKY = st.text(alphabet="abcXYZ019:/@,?#[]%. -_", max_size=12)
_SCHEMES = st.sampled_from(["", "stomp://", "stomp+ssl://", "http://", "https://", "ftp://"])


def _url(scheme: str, user: str, password: str, host: str) -> str:
    return f"{scheme}{user}:hunter2{password}swordfish@{host}"


def _refusal(parse: Callable[[str], object], text: str) -> str:
    with pytest.raises(OptionError) as caught:
        parse(text)
    message = str(caught.value)
    assert "credentials do not belong in the URL" in message and "\n" not in message
    return message


@settings(max_examples=300, deadline=None)
@given(scheme=_SCHEMES, user=_TRICKY, password=_TRICKY, shape=st.sampled_from(["{}", "stomp://a:1,{}", "{},b:2"]))
def test_no_secret_in_any_host_error(scheme: str, user: str, password: str, shape: str) -> None:
    message = _refusal(parse_broker_url, shape.format(_url(scheme, user, password, "127.0.0.1:61613")))
    assert "hunter2" not in message and "swordfish" not in message


@settings(max_examples=300, deadline=None)
@given(scheme=_SCHEMES, user=_TRICKY, password=_TRICKY, path=st.sampled_from(["", "/", "/api?x=1#f"]))
def test_no_secret_in_any_influx_url_error(scheme: str, user: str, password: str, path: str) -> None:
    url = _url(scheme, user, password, "127.0.0.1:8086" + path)
    message = _refusal(lambda u: read_influx_settings(argparse.Namespace(influx_url=u)), url)
    assert "hunter2" not in message and "swordfish" not in message
