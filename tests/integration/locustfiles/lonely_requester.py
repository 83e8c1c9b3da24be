"""Requests that nobody answers: every reply times out, and the requester must carry on."""

from mqusers import StompRequesterUser


class Requester(StompRequesterUser):
    destination = "/queue/mqusers.unanswered"
