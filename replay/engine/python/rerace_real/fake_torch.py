"""A minimal fake ``torch``, behind the engine only: what FLA's ``fla/ops/utils/cache.py`` needs
to import and run its ``CachedAutotuner`` (issue 29), for Pythons without torch (too big for CI).

It is put in ``sys.modules["torch"]`` only while rerace imports a recorded tuner class's module
that needs torch (tuners.import_alone), and only when this Python has no torch; it is removed
again afterwards, so Triton's own ``import torch`` (if any) still finds none. The module keeps
its reference: ``get_gpu_info`` asks ``torch.cuda`` (no GPU here: ``is_available()`` is False,
so FLA's config directory is ``configs/cpu`` unless ``FLA_GPU_NAME``/``FLA_CONFIG_DIR`` say).
Nothing else of torch exists; the tensors of a replay are rerace's FakeTensors (fakes.py).
"""

__version__ = "0.0+rerace.fake"
RERACE_FAKE = True


class _Cuda:
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def get_device_name(device=0):
        return "rerace virtual GPU"

    @staticmethod
    def device_count():
        return 0


cuda = _Cuda()
