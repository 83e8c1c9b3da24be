"""The capacity search, pure: the next rate to try, a step's verdict, the latency bound and the answer's words."""
