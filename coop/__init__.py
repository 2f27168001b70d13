"""coop: a terminal assistant that remembers.

The package is split so that the memory engine (`coop.memory`) is a library with no terminal I/O, and the
command line (`coop.cli`) is a thin layer that turns its results and errors into output and exit codes.
"""

__version__ = "0.1.0"
