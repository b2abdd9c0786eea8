"""rerace._core: the C++ trace reader in-process (rerace.Trace wraps it)."""
from typing import Any

def read_trace(path: str) -> dict[str, Any]:
    """Reads and validates the trace; raises rerace.Error (65 bad trace, 66 cannot open)."""
