"""The scenario the Kubernetes manifests run: put/get on one queue (locustfiles/put_get.py).

Replace this file with your own scenario (any of locustfiles/, or a few lines subclassing the
mqusers Users); the master and every worker mount the same copy from ConfigMap mqusers-locust.
"""

from mqusers import StompConsumerUser, StompProducerUser


class Getter(StompConsumerUser):
    destination = "/queue/mqusers.k8s"
    fixed_count = 2


class Putter(StompProducerUser):
    destination = "/queue/mqusers.k8s"
