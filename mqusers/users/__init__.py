"""The simulated clients: Locust Users that produce, consume, request and respond over STOMP."""
