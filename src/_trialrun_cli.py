"""The `trialrun` command's first code, outside the package so that it runs before trialrun is imported: Ctrl-C
while trialrun and its dependencies load (a second or more on a loaded machine) ends the command as it does later,
with one line and exit code 130, instead of a traceback. (The first milliseconds, while Python itself starts, are
Python's: a Ctrl-C then ends the process by SIGINT, which a shell also reports as 130.)"""

import sys


def main() -> None:
    try:
        from trialrun.cli import main as command
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        raise SystemExit(130) from None
    command()
