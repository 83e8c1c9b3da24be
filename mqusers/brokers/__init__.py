"""The broker's own figures beside the client's: sources (ActiveMQ's statistics plugin over STOMP,
RabbitMQ's management API, a local JVM) and the sampler that reads them while a test runs.

Modules: ``model.py`` (what every source reports), ``activemq.py`` (``activemqmaps.py``), ``rabbitmq.py``
(``rabbitmqjson.py``), ``artemis.py`` (``artemisjson.py``), ``httpcall.py``, ``jvm.py``, ``sampler.py``,
``brokeroptions.py``.

What they do: the broker's own figures: ActiveMQ's statistics plugin over mqusers' STOMP client (its answers'
maps read by ``activemqmaps.py``), RabbitMQ's management API (its JSON read by ``rabbitmqjson.py``), Artemis's
Jolokia (bulk reads built and read by ``artemisjson.py``; its JVM too), each HTTP call bounded by
``httpcall.py``, a local JVM's ``jstat`` and ``/proc``; one sampler greenlet per test, every call bounded,
failures counted; the ``--mq-broker-metrics*`` options.
"""
