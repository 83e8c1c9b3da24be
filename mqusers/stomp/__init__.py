"""One STOMP connection: frames, the transport seam, session, client, per-delivery receiving, broker dialects."""
