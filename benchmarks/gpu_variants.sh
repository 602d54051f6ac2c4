#!/usr/bin/env bash
# One call on a lent GPU, within $BUDGET seconds (525 unless set; wheels and compiles included): the attention
# threshold checked and base timed as it stands (since 2026-11-27 with the dense loss, benchmarks.gpu's default),
# then the loss it replaced (--cross_entropy=gather: whether the default still gains on this card) and each change
# to try alone (--layer_norm=fused, --steps_per_call=32), each in a process of its own; then the changes that beat
# base by 2% or more together (none: base again, which says how far two runs of one program differ), profiled, with
# txl, written as BENCHMARKS.md's "GPU (JAX backend)" section (on a GPU; on a CPU nothing is written). Each run writes
# $OUT/<name>.json; $OUT/log.txt holds their output, $OUT/section.md the section, $OUT/summary.txt the comparison.
# The call of 2026-11-27 (an H100; BENCHMARKS.md's "GPU: notes") ran these leads against the gather loss: the dense
# loss 1.08x (made the default), --steps_per_call=32 1.01x, --layer_norm=fused 1.00x, so neither of the two left is
# worth the next call's time: put the next leads in their place (what stands in the way: the notes' last part).
#   OUT=/tmp/gpu bash benchmarks/gpu_variants.sh     # PY=.venv/bin/python tries it on a CPU (the tiny preset)
# A device image with JAX but without Keras and keras-hub installs them from .whl/ (git-ignored by .gitignore, so a
# device call names it in carry), fetched beforehand where pip works, for that image's Python (3.12):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux2014_x86_64 -d .whl keras==3.15.1 keras-hub==0.32.0 namex==0.1.0 optree==0.20.0 \
#     absl-py==2.5.1 rich==15.0.0 markdown-it-py==4.3.0 mdurl==0.1.2 pygments==2.21.0 regex==2026.11.19 \
#     h5py==3.14.0 packaging==26.4 typing_extensions==4.16.0 tokenizers==0.23.3
# Keras, keras-hub, namex and optree are always installed from it; the others only where the image lacks them.
set -u
BEGAN=$SECONDS
BUDGET=${BUDGET:-525}
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
PY=${PY:-python3}
if [ -d .whl ] && ! "$PY" -c "import importlib.metadata as m, sys
sys.exit((m.version('keras'), m.version('keras-hub')) != ('3.15.1', '0.32.0'))" 2>/dev/null; then
  wheels=(.whl/keras-3*.whl .whl/keras_hub-*.whl .whl/namex-*.whl .whl/optree-*.whl)
  for missing in $("$PY" -c "import importlib.util as u, sys; print(*(m for m in sys.argv[1:] if not u.find_spec(m)))" \
                   absl rich markdown_it mdurl pygments regex h5py packaging typing_extensions tokenizers); do
    wheels+=(.whl/"$(sed 's/^absl$/absl_py/; s/^markdown_it$/markdown_it_py/' <<<"$missing")"-*.whl)
  done
  echo "installing ${wheels[*]}"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${wheels[@]}" \
    && export PYTHONPATH=/tmp/site:${PYTHONPATH:-} || exit 1
fi
export KERAS_BACKEND=jax PYTHONUNBUFFERED=1 PYTHONPATH=.:${PYTHONPATH:-}
# XLA's autotuning results kept between the runs' processes (JAX keeps them beside its compilation cache): the
# programs of later runs that share fusions with earlier ones compile faster. Their figures are the same programs'.
export JAX_COMPILATION_CACHE_DIR=${JAX_COMPILATION_CACHE_DIR:-/tmp/jax_cache_gpu_variants}
command -v nvidia-smi >/dev/null \
  && nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
run() {  # name, most seconds allowed, then benchmarks.gpu's flags; skipped when the budget has too little left
  local name=$1 limit=$2; shift 2
  local left=$((BUDGET - (SECONDS - BEGAN)))
  if ((left < 40)); then echo "=== $name skipped: ${left} s of the budget left"; return; fi
  ((limit > left)) && limit=$left
  echo "=== $name (at $((SECONDS - BEGAN)) s, up to $limit s): $*"
  timeout -k 5 "$limit" "$PY" -m benchmarks.gpu --peak_seconds=1 --json="$OUT/$name.json" "$@" 2>&1 \
    | grep --line-buffered -v "^WARNING: All log\|^I[0-9]\{4\} \|^E0000\|cpu_feature_guard" | tee -a "$OUT/log.txt" \
    | grep --line-buffered -v "^|\|^$\|^Device:\|^bfloat16 matmul peak measured\|^  "
  echo "=== $name ended at $((SECONDS - BEGAN)) s"
}
run base 150 --models=base --nowrite --check_attention --rounds=3
run gather_loss 110 --models=base --nowrite --cross_entropy=gather --rounds=3
run scan 110 --models=base --nowrite --steps_per_call=32 --rounds=3
run fused_ln 110 --models=base --nowrite --layer_norm=fused --rounds=3
declare -A CHANGE=([scan]=--steps_per_call=32 [fused_ln]=--layer_norm=fused)  # the leads; gather_loss is none
WINNERS=$("$PY" -c "
import json, sys
def rate(name):
    try:
        return json.load(open(f'$OUT/{name}.json'))['models']['base']['tokens_per_second']
    except (OSError, KeyError, ValueError):
        return None
base = rate('base')
print(*(n for n in sys.argv[1:] if base and rate(n) and rate(n) >= 1.02 * base))" "${!CHANGE[@]}")
BEST=(); for name in $WINNERS; do BEST+=("${CHANGE[$name]}"); done
echo "=== changes kept (2% or more over base): ${WINNERS:-none}"
cp BENCHMARKS.md "$OUT/.benchmarks_before.md"
run best 260 --models=base,txl --profile --rounds=3 ${BEST[@]+"${BEST[@]}"}  # writes BENCHMARKS.md on a GPU
if ! cmp -s BENCHMARKS.md "$OUT/.benchmarks_before.md"; then  # the run finished and wrote its section
  sed -n '/^<!-- GPU (JAX backend) -->$/,/^<!-- \/GPU (JAX backend) -->$/p' BENCHMARKS.md > "$OUT/section.md"
fi
rm -f "$OUT/.benchmarks_before.md"
echo "=== summary (at $((SECONDS - BEGAN)) s)"
"$PY" - "$OUT" <<'EOF' | tee "$OUT/summary.txt"
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(out, f"{name}.json")))
    except (OSError, ValueError):
        return None
base = (load("base") or {}).get("models", {}).get("base", {}).get("tokens_per_second")
for name in ("base", "gather_loss", "scan", "fused_ln", "best"):
    r = load(name)
    if r is None:
        print(f"{name:<11} no figures")
        continue
    plain = {"steps_per_call": 1, "cross_entropy": "dense", "layer_norm": "keras"}
    changed = {k: v for k, v in r.get("options", {}).items() if v != plain.get(k)}
    for model, m in r["models"].items():
        versus = f"{m['tokens_per_second'] / base:5.2f}x base" if base and model == "base" else " " * 12
        share = m["flops_per_second"] / r["peak_flops"]
        print(f"{name:<11} {model:<5} {m['tokens_per_second']:>11,.0f} tokens/s {share:6.1%} of "
              f"{r['peak_flops'] / 1e12:.3g} TFLOP/s  {versus}  compile {m['compile_seconds']:.0f} s, losses "
              f"{m['losses'][0]:.3f} -> {m['losses'][-1]:.3f}, cuDNN attention {m['cudnn_attention']} {changed or ''}")
    for keys, c in r.get("attention", {}).items():
        verdict = "ok" if c["found"] == c["expected"] else f"EXPECTED {c['expected']}"
        print(f"{'':<11} attention at {keys} keys (FLASH_MIN_KEYS={r['flash_min_keys_used']}): {c['found']} {verdict}")
    p = r["models"].get("base", {}).get("profile")
    if p and "error" not in p:
        print(f"{'':<11} profile: {p['wall_ms']:.1f} ms a step traced, {p['untraced_ms']:.1f} untraced, busy "
              f"{p['busy_ms']:.1f}, {p['kernels_per_step']:.0f} kernels, idle {p['idle_short_ms']:.1f} short + "
              f"{p['idle_long_ms']:.1f} long; " + ", ".join(f"{k} {ms:.1f}" for k, ms in p["kinds_ms"].items()))
    elif p:
        print(f"{'':<11} profile: {p['error']}")
EOF
