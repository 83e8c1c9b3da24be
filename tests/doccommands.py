"""The commands README.md and docs/*.md show, and where each is run or why it is not run here.

A command is a line of a fenced ``sh`` block (continuation lines joined, comments dropped). Each one
starts with a prefix of :data:`RUN_HERE` (the test of tests/integration/test_readme_commands.py that
runs it, with short durations) or of :data:`NOT_RUN` (why not, and what checks it instead);
tests/unit/test_docs.py fails on a command in neither and checks what it can of every command
without running it (its files, options, Kubernetes objects).
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Every page whose commands are run and whose links are checked.
PAGES = (ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md")))

#: Prefixes of commands run here -> the test of tests/integration/test_readme_commands.py that runs them
#: (``file::test`` for a test of another file of tests/integration/).
RUN_HERE = {
    "LOCUST_MQ_USER=loadtest": "test_your_broker_example_runs_over_tls_with_its_passcode_from_a_file",
    "make demo": "test_make_demo_and_the_headless_example_and_mqusers_report",
    "locust -f locustfiles/queue_balance.py --host": "test_make_demo_and_the_headless_example_and_mqusers_report",
    "mqusers report before.json": "test_make_demo_and_the_headless_example_and_mqusers_report",
    "locust -f locustfiles/pubsub.py --host": "test_the_web_ui_examples_serve_the_ui",
    'locust -f "$(mqusers locustfiles)/pubsub.py"': "test_the_web_ui_examples_serve_the_ui",
    "locust -f locustfiles/put_get.py --mq-destination": "test_the_many_destinations_example_runs",
    "locust -f locustfiles/queue_balance.py --master": "test_the_distributed_example_runs_and_ends",
    "locust -f locustfiles/queue_balance.py --worker": "test_the_distributed_example_runs_and_ends",
    "mqusers find-max -f locustfiles/": "test_the_capacity_examples_run",
    "mqusers curve -f locustfiles/": "test_the_capacity_examples_run",
    "mqusers report find-max.json": "test_the_capacity_examples_run",
    "mqusers matrix --host": "test_the_matrix_examples_run",
    "mqusers matrix --modes": "test_the_matrix_examples_run",
    "locust -f locustfiles/put_get.py --host": "test_the_put_get_examples_run",
    "locust -f locustfiles/put_get.py --mq-consumer-host": "test_networks.py::test_forward_produce_on_one_broker_consume_on_the_other_every_message_once",  # noqa: E501
    "locust -f locustfiles/pubsub.py --mq-consumer-host": "test_networks.py::test_a_topic_across_the_network_waits_for_its_demand_and_loses_nothing",  # noqa: E501
    "locust -f locustfiles/queue_balance.py --mq-consumer-host": "test_networks.py::test_spread_competing_consumers_on_two_brokers_each_brokers_share_as_the_brokers_count_it",  # noqa: E501
    "locust -f locustfiles/pubsub.py --mq-consumers 3": "test_networks.py::test_fan_out_a_topics_subscribers_on_three_brokers_each_get_every_message_once",  # noqa: E501
    "mqusers cluster-compare --latency-rate 1000 --config single=": "test_networks.py::test_cluster_compare_takes_networks_as_rows_says_what_each_hop_adds_and_what_a_kill_costs",  # noqa: E501
    "mqusers cluster-compare --latency-rate 1000 --config artemis=": "test_artemis_cluster.py::test_cluster_compare_takes_a_cluster_as_a_row_and_says_what_its_hop_adds",  # noqa: E501
    "locust -f locustfiles/backlog.py --host": "test_the_backlog_example_runs",
    "locust -f locustfiles/churn.py --host": "test_the_churn_example_runs",
    "locust -f locustfiles/transactions.py --host": "test_the_transactions_example_runs",
    "locust -f locustfiles/selectors.py --host": "test_the_selectors_example_runs",
    "locust -f locustfiles/groups.py --host": "test_the_groups_example_runs",
    "locust -f locustfiles/expiry.py --host": "test_the_expiry_example_runs",
    "locust -f locustfiles/nack.py --host": "test_the_nack_example_runs",
    "locust -f locustfiles/priority.py --host": "test_the_priority_example_runs",
    "locust -f locustfiles/put_get.py --mq-hdr-log": "test_the_hdr_log_examples_run",
    'java -cp "$(python -m services hdr-jar)"': "test_the_hdr_log_examples_run",
    "mqusers repeat ": "test_the_repeat_and_history_examples_run",
    "locust -f locustfiles/pubsub.py --headless": "test_the_repeat_and_history_examples_run",
    "mqusers report reports/": "test_the_repeat_and_history_examples_run",
    "locust -f locustfiles/put_get.py --headless": "test_the_compare_examples_run",
    "mqusers compare base.json": "test_the_compare_examples_run",
    "locust -f locustfiles/put_get.py --master": "test_netns.py::test_workers_on_three_hosts_behind_a_long_link_to_the_master",  # noqa: E501
    "locust -f - --worker": "test_netns.py::test_workers_on_three_hosts_behind_a_long_link_to_the_master",
    "locust -f locustfiles/queue_balance.py --prometheus-port": (
        "test_prometheus.py::test_a_scraped_run_equals_its_report"
    ),
}
#: Prefixes of commands not run here -> why, and what tests the same instead.
NOT_RUN = {
    "pip install '.[influx,prometheus]'": "test_packaging.py builds this wheel and installs it in a fresh venv "
    "(offline, --no-deps: the extras are this venv's)",
    "make test": "the suite this test is part of (.ci/run runs it)",
    "make unit": "make test's unit phase, the same command (tools/testrun.py); tests/unit/test_testrun.py checks both",
    "mqusers matrix --locustfiles my-scenarios/": "a placeholder folder and '...'; --locustfiles: test_matrix.py",
    "python -m services start activemq-net-a": "test_networks.py starts the same two through services.start",
    "MQUSERS_NETWORK_SHAPE=line python -m services start": "test_networks.py starts the line (services.start)",
    "python -m services start artemis-cluster-a": "test_artemis_cluster.py starts the same nodes (services.start)",
    "python -m services start activemq-persistent postgresql": "eleven services; test_cluster_*.py start them",
    "mqusers cluster-compare": "eleven services and six failovers: test_cluster_failover.py runs each pair",
    "python -m services start activemq-persistent": "kills the shared broker; test_failover.py runs this scenario",
    "locust -f tests/integration/locustfiles/failover.py": "kills the shared broker; test_failover.py runs it",
    "cp .env.example .env": "writes into the checkout; test_compose.py checks .env.example",
    "docker ": "no Docker engine here; test_compose.py runs `docker compose config`; test_docs.py checks the files",
    "kubectl ": "no cluster here; test_kubernetes.py validates the overlays, test_docs.py what each command names",
    "pod=$(kubectl": "no cluster here; test_docs.py checks the Job it names",
    "helm ": "no cluster or helm here; test_kubernetes_chart.py checks the values file against the chart",
    "mqusers find-max -f /mnt/locust/": "a path in the pod: test_docs.py holds it equal to the find-max overlay's Job",
}


def commands(page: Path) -> list[str]:
    """Each command of ``page``'s fenced ``sh`` blocks: continuation lines joined, comments dropped."""
    found = []
    for block in re.findall(r"^```sh\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            command = re.sub(r"(^|\s+)#.*$", "", line).strip()
            if command:
                found.append(" ".join(command.split()))
    return found


def shown_commands() -> list[tuple[Path, str]]:
    """(page, command) for every command of every page."""
    return [(page, command) for page in PAGES for command in commands(page)]


def where_run(command: str) -> str | None:
    """The test that runs ``command``, or None."""
    return next((test for prefix, test in RUN_HERE.items() if command.startswith(prefix)), None)


def why_not_run(command: str) -> str | None:
    """Why ``command`` is not run here, or None."""
    return next((why for prefix, why in NOT_RUN.items() if command.startswith(prefix)), None)


def shown_words(prefix: str, addresses: dict[str, str] | None = None) -> list[str]:
    """The words of the page's one command starting with ``prefix``, each address of ``addresses`` replaced by its
    value (a service's URL where the tests run, MQUSERS_PORT_OFFSET included)."""
    [command] = [c for _, c in shown_commands() if c.startswith(prefix)]
    for shown_address, address in (addresses or {}).items():
        command = command.replace(shown_address, address)
    return shlex.split(command)


def shown(prefix: str, values: dict[str, str]) -> list[str]:
    """The page's command starting with ``prefix``, its options' values replaced by ``values``, run by this Python."""
    [command] = [c for _, c in shown_commands() if c.startswith(prefix)]
    words = shlex.split(command)
    for index, word in enumerate(words[:-1]):
        if word in values:
            words[index + 1] = values[word]
    assert words[0] == "locust" and set(values) <= set(words), (command, values)
    return [sys.executable, "-m", "locust", *words[1:]]
