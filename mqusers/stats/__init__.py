"""Statistics over saved runs, pure: interval samples, headline figures, bootstrap intervals, verdicts."""
