"""Event names: each requester's own reply destination is one row, every other destination its own."""

from mqusers.measure.names import QUEUE_REPLY_PREFIX, TEMP_REPLY_PREFIX, event_name, split_event_name


def test_every_requesters_reply_destination_is_one_event_name() -> None:
    names = {event_name("subscribe", TEMP_REPLY_PREFIX + f"p1-Requester-{n}") for n in range(4)}
    assert names == {"subscribe /temp-queue/mqusers-*"}
    assert event_name("subscribe", QUEUE_REPLY_PREFIX + "p1-Requester-2") == "subscribe /queue/mqusers.reply.*"
    # A scenario's own temporary and reply-like destinations keep their names.
    assert event_name("receive", "/temp-queue/prices") == "receive /temp-queue/prices"
    assert event_name("subscribe", "/queue/mqusers.replyx") == "subscribe /queue/mqusers.replyx"
    assert split_event_name("subscribe /temp-queue/mqusers-*") == ("subscribe", "/temp-queue/mqusers-*")
