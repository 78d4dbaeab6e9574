#!/usr/bin/env bash
# Regenerates hwmodels/kernel_tables/*.json from the public tables in ../shared/data/gpu (a dev-time
# step: CI and the build use the committed JSON). Usage: make_tables.sh [PROTWIN] [DATA_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
protwin="${1:-$here/../../build/release/cli/protwin}"
data="${2:-$here/../../../shared/data/gpu}"
[ -d "$data" ] || data=/work/shared/data/gpu
imp() { "$protwin" import-table "$@" > /dev/null; }

VIDUR=microsoft/vidur@7d47513
for g in a100 h100; do
  imp --format vidur --source "$VIDUR data/profiling/compute/$g/meta-llama/Llama-2-{7b,70b}-hf/mlp.csv" \
      --device "NVIDIA ${g^^} (DGX)" --per-octave 3 \
      "$data/vidur/${g}_llama-2-7b_mlp.csv.gz" "$data/vidur/${g}_llama-2-70b_mlp.csv.gz" -o "$here/vidur-$g.json"
  imp --format vidur --source "$VIDUR data/profiling/network/${g}_dgx/{all_reduce,send_recv}.csv" \
      --device "NVIDIA ${g^^} (DGX)" \
      --per-octave 4 "$data/vidur/${g}_dgx_all_reduce.csv.gz" "$data/vidur/${g}_dgx_send_recv.csv.gz" -o "$here/vidur-$g-network.json"
done
imp --format llmcompass --source "PrincetonUniversity/LLMCompass@2e015fd ae/figure5/*/real_hardware/matmul_A100.csv" \
    --device "NVIDIA A100" "$data/llmcompass/matmul_A100.csv" -o "$here/llmcompass-a100.json"
imp --format nccl-tests --source "VIA-Research/vTrain@f8dda84 trace/a100/AR_GPU{2..8}_1M_1024M_LUT" \
    --device "NVIDIA A100 (8-GPU node)" --per-octave 4 "$data"/vtrain-nccl/a100_all_reduce_{2,3,4,5,6,7,8}gpu.lut.gz \
    -o "$here/vtrain-a100-nccl.json"
NEUSIGHT="sitar-lab/NeuSight@6945927 scripts/asplos/data/dataset/test"
for pair in "a100-pcie-40gb:NVIDIA A100-PCIE-40GB" "a100-80g-pcie:NVIDIA A100 80GB PCIe" "h100:NVIDIA H100 80GB HBM3"; do
  name="${pair%%:*}"; dev="${pair#*:}"
  imp --format neusight --source "$NEUSIGHT/{linear,bmm,elem,ln,softmax}.csv" --device "$dev" \
      "$data"/neusight/test_{linear,bmm,elem,ln,softmax}.csv.gz -o "$here/neusight-$name.json"
done
ls -la "$here"/*.json
