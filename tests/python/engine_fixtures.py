"""What the real-code engine's Python tests share (test_engine.py, test_tracer.py,
test_tuners.py, test_control.py): replay/engine/python on sys.path, Triton when this Python
has it (else ``SKIP`` says why), and one recorded tuner call."""

import os
import sys

ENGINE_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "replay", "engine", "python"))
sys.path.insert(0, ENGINE_DIR)

try:
    import triton
    from triton.runtime import autotuner
    SKIP = None
except Exception as e:  # pragma: no cover - depends on the machine
    triton = None
    autotuner = None
    SKIP = "triton is not installed: %s" % e


CALL = {
    "tuner": 1, "tuner_class": "triton.runtime.autotuner.Autotuner", "kernel": "l2norm_fwd_kernel",
    "key": "(1024, 'torch.float32', 'torch.float32')",
    "configs": ["BLOCK_N: 1024, num_warps: 1, num_ctas: 1, num_stages: 3, maxnreg: None",
                "BLOCK_N: 2048, num_warps: 2, num_ctas: 1, num_stages: 3, maxnreg: None"],
    "arg_names": ["x_ptr", "y_ptr", "N", "eps", "BLOCK_N"], "restore_value": [1],
    "reset_to_zero": [], "bench_ns": [2000, 1000], "bench_reps": [3, 3], "launch_ns": 500,
}

