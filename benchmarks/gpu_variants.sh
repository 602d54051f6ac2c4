#!/usr/bin/env bash
# One call on a lent GPU: base's step timed and profiled, then one change at a time, each in a process of its own,
# each writing its figures to $OUT/<name>.json and its output to $OUT/log.txt.
#   OUT=/tmp/gpu bash benchmarks/gpu_variants.sh     # PY=.venv/bin/python to try it on a CPU (the tiny preset)
# A device image with JAX but neither Keras nor keras-hub gets their wheels from .whl/ (git-ignored through
# .git/info/exclude), fetched beforehand where pip works, for that image's Python (3.12):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
#     -d .whl keras==3.15.1 keras-hub==0.32.0 namex==0.1.0 optree==0.20.0
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
if [ -d .whl ]; then
  "${PY:-python3}" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:${PYTHONPATH:-} || exit 1
fi
PY=${PY:-python3}
export KERAS_BACKEND=jax PYTHONUNBUFFERED=1 PYTHONPATH=.:${PYTHONPATH:-}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
run() {  # name, seconds allowed, then flags (an XLA_FLAGS=... word first sets that variable for this run alone)
  local name=$1 LIMIT=$2; shift 2
  local env=()
  if [[ ${1:-} == XLA_FLAGS=* ]]; then env=("$1"); shift; fi
  echo "=== $name: ${env[*]:-} $*"
  env "${env[@]}" timeout "$LIMIT" "$PY" -m benchmarks.gpu --models=base --nowrite --json="$OUT/$name.json" "$@" 2>&1 \
    | grep --line-buffered -v "^WARNING: All log\|^I0000\|^E0000\|cpu_feature_guard" | tee -a "$OUT/log.txt" | grep --line-buffered -v "^|\|^$\|^Device:\|^bfloat16 matmul peak measured"
}
# Within one 10-minute call, the start and the wheels' install included. The second call of 2026-11-26 (the first
# one's runs: base --breakdown --profile, --noflash_attention, and XLA_FLAGS=--xla_gpu_enable_triton_gemm=false,
# are in BENCHMARKS.md's GPU notes):
CUBLAS=XLA_FLAGS=--xla_gpu_enable_triton_gemm=false
LONG=(--set=pairs=6000 --set=min_length=184 --set=max_length=200)
run final 110 $CUBLAS --profile --rounds=3
run final_triton 90 --rounds=2
run long_cudnn 90 $CUBLAS "${LONG[@]}" --flash_min_keys=0 --rounds=2
run long_xla 90 $CUBLAS "${LONG[@]}" --flash_min_keys=100000 --rounds=2
run no_dropout 80 $CUBLAS --set=dropout=0 --rounds=2
echo "=== summary"
for f in "$OUT"/*.json; do
  "$PY" -c "import json,sys; r=json.load(open(sys.argv[1])); b=r['models']['base']; print(f\"{sys.argv[1].split('/')[-1]:<22} {b['tokens_per_second']:>12,.0f} tokens/s {b['flops_per_second']/r['peak_flops']:6.1%} of {r['peak_flops']/1e12:.0f} TFLOP/s\")" "$f"
done
