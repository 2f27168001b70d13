"""The memory engine: storage, embeddings and retrieval. A library: no terminal I/O, no typer/rich imports."""

import os

# numpy's OpenBLAS wakes a thread per core for every matrix product. The engine's products are small (a query
# against a thousand vectors, fifty recalled items against each other), where waking the threads costs far more
# than the product: on a busy 2-core machine a 60 x 384 product took 4.5 ms with them and 0.06 ms without. Set
# before numpy is first imported (the engine imports it lazily); a value the user set wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
