"""The broker's own figures beside the client's: sources (ActiveMQ's statistics plugin over STOMP,
RabbitMQ's management API, a local JVM) and the sampler that reads them while a test runs."""
