"""`python -m coop` runs the same entry point as the `coop` console script."""

from coop.cli.app import main

if __name__ == "__main__":
    main()
