"""pytest integration for trialrun (registered through the pytest11 entry point)."""
