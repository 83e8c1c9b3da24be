"""``--mq-payload`` through Locust on real brokers: what arrives is what each kind says, read back by plain stomp.py."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from tests.integration.brokers import Broker, on_four, started
from tests.integration.locust_runs import run_locust
from tests.integration.reference_client import read_left


@pytest.mark.parametrize("broker", on_four("binary bodies"), indirect=True)
def test_random_binary_bodies_arrive_whole_and_audited(broker: Broker, destination, tmp_path: Path) -> None:
    """Random bytes (NULs, newlines, invalid UTF-8 among them) through the broker and back: sizes and
    checksums hold for every message, and the broker counted what mqusers sent."""
    queue = destination("queue")
    run = run_locust(
        "queue_balance.py", broker.url, "--mq-destination", queue, "--mq-payload", "random", "--mq-size", "4KB",
        "--mq-messages", "100", "--mq-rate", "200", users=5, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    row = run.row(queue)
    assert (row["sent"], row["received"], row["errors"], row["lost"], row["duplicated"]) == (200, 200, 0, 0, 0)
    assert broker.counters(queue)["accepted"] == 200
    assert "4,096 B random messages" in " ".join(run.output.split())


def put_only(broker: Broker, queue: str, tmp_path: Path, *payload: str) -> list:
    run = run_locust(
        "put_only.py", broker.url, "--mq-destination", queue, "--mq-total-messages", "200", *payload,
        users=2, seconds=10, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    frames = read_left(broker, queue, 200)
    for frame in frames:
        assert int(frame.headers["mq-size"]) == len(frame.body), frame.headers
        assert int(frame.headers["mq-crc32"]) == zlib.crc32(frame.body), frame.headers
    return frames


def test_json_bodies_are_json_of_the_size_asked_and_differ(destination, tmp_path: Path) -> None:
    broker = started("activemq")
    frames = put_only(broker, destination("queue"), tmp_path, "--mq-payload", "json", "--mq-size", "2KB")
    bodies = {frame.body for frame in frames}
    assert {len(body) for body in bodies} == {2048} and len(bodies) > 1
    assert all(json.loads(body)["records"] for body in bodies)


def test_a_templates_fields_are_filled_and_a_folders_files_sent_as_they_are(destination, tmp_path: Path) -> None:
    broker = started("activemq")
    template = tmp_path / "order.json"
    template.write_text('{"order": "{{uuid}}", "qty": {{int}}, "item": "{{word}}"}')
    filled = [json.loads(f.body) for f in put_only(broker, destination("queue"), tmp_path, "--mq-payload",
                                                   f"template:{template}")]  # fmt: skip
    assert len({order["order"] for order in filled}) > 1 and all(isinstance(o["qty"], int) for o in filled)
    folder = tmp_path / "bodies"
    folder.mkdir()
    files = {folder / f"{n}.bin": bytes(range(n, 256)) * (n + 1) for n in range(3)}
    for path, content in files.items():
        path.write_bytes(content)
    sent = {f.body for f in put_only(broker, destination("queue"), tmp_path, "--mq-payload", f"files:{folder}")}
    assert sent == set(files.values())


def test_sizes_drawn_from_a_distribution_arrive_with_their_own_sizes(destination, tmp_path: Path) -> None:
    broker = started("activemq")
    frames = put_only(broker, destination("queue"), tmp_path, "--mq-size-dist", "uniform:100,10KB")
    sizes = {len(frame.body) for frame in frames}
    assert len(sizes) > 20 and min(sizes) >= 100 and max(sizes) <= 10240, sorted(sizes)


def test_a_csv_profiles_size_column_steps_each_messages_size_at_its_due_time(destination, tmp_path: Path) -> None:
    """200 B for 2 s, then 4,000 B for 2 s at 100 msg/s: read back by plain stomp.py, every message has the
    size in effect at its due time, none sent before 2 s is large, and the report's bytes are theirs."""
    broker = started("activemq")
    queue = destination("queue")
    profile = tmp_path / "sizes.csv"
    profile.write_text("seconds,rate,size\n0,100,200\n2,100,4000\n")
    run = run_locust(
        "put_only.py", broker.url, "--mq-destination", queue, "--mq-total-messages", "400",
        "--mq-profile", f"csv:{profile}", users=2, seconds=15, tmp_path=tmp_path,
    )  # fmt: skip
    assert run.code == 0, run.output[-3000:]
    frames = read_left(broker, queue, 400)
    for frame in frames:
        assert int(frame.headers["mq-size"]) == len(frame.body), frame.headers
        assert int(frame.headers["mq-crc32"]) == zlib.crc32(frame.body), frame.headers
    t0 = min(int(frame.headers["mq-due-ns"]) for frame in frames)  # message 0 is due at the profile's 0 s
    # Message k is due at k / 100 s: its index from its due stamp, each once.
    by_index = {round((int(f.headers["mq-due-ns"]) - t0) / 1e7): f for f in frames}
    assert sorted(by_index) == list(range(400))
    assert [k for k, f in by_index.items() if len(f.body) != (200 if k < 200 else 4000)] == []
    # By its send stamp: nothing sent before 2 s is large (a small one may go out after 2 s when late).
    early = [f for f in frames if int(f.headers["mq-sent-ns"]) - t0 < 2_000_000_000]
    assert early and all(len(f.body) == 200 for f in early)
    row = run.row(queue)
    assert (row["sent"], row["errors"]) == (400, 0)
    # The report's Mbit/s over its send span is the bytes stomp.py read back: 200 x 200 B + 200 x 4,000 B.
    assert sum(len(f.body) for f in frames) == 200 * 200 + 200 * 4000
    assert row["send_rate_mbit"] * 1e6 / 8 * row["send_span_s"] == pytest.approx(200 * 200 + 200 * 4000, rel=1e-6)
    assert "200-4,000 B printable messages (sizes from the profile)" in " ".join(run.output.split())
