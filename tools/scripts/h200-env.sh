# Sourced by the h200-*.sh scripts (run through the device tool from the repository root):
# the binaries built here under .devrun/{bin,lib,tests}, their shared libraries under .devlibs,
# CUDA's and CUPTI's libraries, NVLink multicast off, and $out for logs and traces.
out=${OUT:-/tmp/rerace-h200}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.devlibs:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
bin=$PWD/.devrun/bin
# rerace record --probe finds the probe beside the binaries, as installed
# (<prefix>/share/rerace/python/rerace_probe): a copy (h200-recorded-check.sh replaces it).
mkdir -p .devrun/share/rerace/python
[ -e .devrun/share/rerace/python/rerace_probe ] || cp -r recorder/python/rerace_probe .devrun/share/rerace/python/
