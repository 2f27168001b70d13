"""Helpers shared by the benchmarks: loading the embedder the way coop does, timing, the machine's description.

The benchmarks are scripts (`python bench/locomo.py ...`), not part of the package or the test suite. They import
coop from the checkout they sit in, so a fresh checkout with its venv runs them without installing anything else.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`: use the coop next to us
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never wait on a model hub: the model is local or absent


class BenchError(SystemExit):
    """A one-line error for the person running the benchmark (exit code 1)."""

    def __init__(self, message: str) -> None:
        print(f"error: {message}", file=sys.stderr)
        super().__init__(1)


def load_embedder(kind: str = "fastembed", model_path: str | None = None, dims: int = 384):
    """The embedder coop would use (`memory.embedder` defaults, the same model resolution), or the hash embedder.

    `model_path` overrides the resolution (like `memory.embedder.model_path`); without it coop's own search order
    applies: `COOP_MEMORY_EMBEDDER_MODEL_PATH`, then the provisioned directory. A missing model is a clear error."""
    from coop.config.loading import EmbedderConfig
    from coop.memory.growth.embedders import load_embedder as coop_load_embedder
    from coop.memory.growth.embedders import resolve_model_path

    if kind == "hash":
        config = EmbedderConfig(provider="hash", dims=dims)
    else:
        path = model_path or os.environ.get("COOP_MEMORY_EMBEDDER_MODEL_PATH", "")
        config = EmbedderConfig(model_path=path)
        resolved = resolve_model_path(config)
        if resolved is None or not (Path(resolved) / "model.onnx").is_file():
            raise BenchError(f"the embedding model {config.model} was not found "
                             f"({'no model.onnx in ' + resolved if resolved else 'no local model directory'}); "
                             "run ../shared/tools/provision-embedder-model, or pass --model-path DIR")
    status = coop_load_embedder(config)
    if status.embedder is None:
        raise BenchError(f"cannot load the embedder: {status.error}")
    return status.embedder


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def machine() -> str:
    """'2 cores, <CPU model>, Python 3.11.x' for the report."""
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB. Linux's `ru_maxrss` carries the parent's peak across fork and
    exec (a child measured from a benchmark holding a million vectors would report the parent's size), so
    /proc's VmHWM, which starts afresh with the new program, is read where there is one."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
