"""Producers on one Locust worker, consumers on another: each worker's role comes from its environment.

    MQ_ROLE=producer locust -f split_roles.py --worker --master-host M   # on the producer host
    MQ_ROLE=consumer locust -f split_roles.py --worker --master-host M   # on the consumer host
    locust -f split_roles.py --master --headless -u 4 -r 4 ...            # 2 Peers per worker

Why one class named ``Peer`` whose base depends on ``MQ_ROLE`` (Locust 2.47, read in its source):

- The master decides which worker runs which User class (``locust/dispatch.py``: users in
  weight/fixed-count order, handed to workers round-robin, workers sorted by their random ids).
  Nothing lets a class be pinned to a worker.
- A class missing on a worker (e.g. made ``abstract`` there by an env var) is fatal for it: the
  master still names the class in its spawn message, ``WorkerRunner.start_worker`` raises
  ``KeyError`` and that worker spawns nothing, while the master runs on and exits 0.
- ``--tags`` / ``--exclude-tags`` filter tasks, not Users, and the master's values overwrite each
  worker's own (``custom_args_from_master`` in ``locust/runners.py``); ``--class-picker`` is the
  master's web UI choice of classes for all workers at once.

So every process has the same single class name, and the round-robin spreads ``-u 2k`` users of
it as exactly k per worker (both are connected before the start: ``--expect-workers``). What a
``Peer`` does is the worker's own business. The master's ``Peer`` (``MQ_ROLE`` unset) is a
producer and, like all of them, has no ``fixed_count``: the start barrier, which counts the
master's fixed-count consumer classes, has nothing to wait for, so producers start as soon as the
master has measured the workers' clocks. On a queue messages sent before a consumer subscribed
wait in the broker, so none is lost; a topic run would need the barrier to know the consumers.
"""

import os
import sys

from mqusers import StompConsumerUser, StompProducerUser

ROLE = os.environ.get("MQ_ROLE", "")
if ROLE not in ("", "producer", "consumer"):
    raise SystemExit(f"split_roles.py: MQ_ROLE must be producer or consumer, got {ROLE!r}")

DESTINATION = "/queue/mqusers.split"

if ROLE == "consumer":

    class Peer(StompConsumerUser):
        destination = DESTINATION
        ack = "client-individual"
        prefetch = 10

else:

    class Peer(StompProducerUser):  # type: ignore[no-redef]
        destination = DESTINATION
        rate = 100


# The test checks each worker's log for this line: the role really is the one it was given.
print(f"split_roles: MQ_ROLE={ROLE or '(unset)'}: Peer is a {Peer.__mro__[1].__name__}", file=sys.stderr, flush=True)
