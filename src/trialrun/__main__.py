"""`python -m trialrun` is the `trialrun` command."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="trialrun")
