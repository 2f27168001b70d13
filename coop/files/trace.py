"""The trace file: one JSON object per line per event (retrieval legs, prompt sizes, model latency).

Enabled by `[trace] file` or `COOP_TRACE_FILE`. Events carry counts, scores, ids and timings, never message
text or secrets; every string in an event is masked (`coop.privacy.secrets.mask`) all the same, so an error text that
quotes a key is written as `[secret]`. The file is created 0600. A trace that cannot be written is switched off,
never fatal.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from coop.files.writing import private_file
from coop.privacy.secrets import mask, mask_data


class Tracer:
    def __init__(self, path: str | None) -> None:
        self.path = path or None
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def event(self, event: str, **fields: Any) -> None:
        if self.path is None:
            return
        record = mask_data({"ts": round(time.time(), 6), "event": event, **fields})
        line = json.dumps(record, ensure_ascii=False, default=lambda value: mask(str(value))) + "\n"
        try:
            with self._lock:
                fd = private_file(self.path)
                with os.fdopen(fd, "a", encoding="utf-8") as handle:
                    handle.write(line)
        except OSError:
            self.path = None


NO_TRACE = Tracer(None)
