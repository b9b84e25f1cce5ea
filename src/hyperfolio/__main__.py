"""The `hyperfolio` command: the CLI imported inside a guard, so a Ctrl-C while its libraries load (a second
or more on a cold disk) ends with one line and exit code 130, not a traceback through the import."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from hyperfolio.cli import main as run_cli
    except KeyboardInterrupt:
        print("interrupted while starting; nothing was done", file=sys.stderr)
        raise SystemExit(130) from None
    run_cli()


if __name__ == "__main__":
    main()
