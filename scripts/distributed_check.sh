#!/usr/bin/env bash
# The distributed comparison on every GPU of this machine, from both launch forms: torchrun (bf16) and
# compare.py --nproc (fp32), each kernel checked whole and timed per strategy against one GPU, after NCCL's
# all-gather alone at a few sizes. Logs, JSON and the plots go to $GPU_LOG_DIR (default ./gpu-logs).
# PART=bf16 or PART=fp32 runs one half (the default, all, runs both); PART=repeat runs bf16 at 16384³ (rows and
# push) REPEATS times, each a run of its own: the spread of the efficiency across runs, not only within one.
#   GPU_LOG_DIR=/tmp/logs BF16_SIZES=8192,16384 PART=bf16 scripts/distributed_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${GPU_LOG_DIR:-./gpu-logs}
PART=${PART:-all}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NPROC=$(python -c "import torch; print(torch.cuda.device_count())")
status=0
{ nvidia-smi topo -m; echo "GPUs: $NPROC"; } >"$LOG_DIR/topology.txt" 2>&1

if [[ $PART == all || $PART == bf16 ]]; then
    # 8192x57344x8192: a Llama-3-70B layer's fused gate and up projections at a prefill of 8192 tokens
    python -m torch.distributed.run --nproc-per-node="$NPROC" compare.py --distributed --dtype bf16 \
        --sizes "${BF16_SIZES:-8192,16384,8192x57344x8192}" --impl cuda,triton,cublas --rep 100 \
        --json "$LOG_DIR/distributed_bf16.json" --plots "$LOG_DIR" >"$LOG_DIR/distributed_bf16.log" 2>&1 || status=1
    tail -n 60 "$LOG_DIR/distributed_bf16.log"
fi
if [[ $PART == all || $PART == fp32 ]]; then
    python compare.py --nproc "$NPROC" --dtype fp32 --sizes "${FP32_SIZES:-8192}" --impl cuda,triton,cublas \
        --rep 100 --json "$LOG_DIR/distributed_fp32.json" >"$LOG_DIR/distributed_fp32.log" 2>&1 || status=1
    tail -n 25 "$LOG_DIR/distributed_fp32.log"
fi
if [[ $PART == repeat ]]; then
    for i in $(seq "${REPEATS:-3}"); do
        python -m torch.distributed.run --nproc-per-node="$NPROC" compare.py --distributed --dtype bf16 --sizes 16384 \
            --impl cuda,triton,cublas --strategies rows,push --rep 100 --json "$LOG_DIR/distributed_bf16_repeat$i.json" \
            >"$LOG_DIR/distributed_bf16_repeat$i.log" 2>&1 || status=1
        grep -A12 "^kernel" "$LOG_DIR/distributed_bf16_repeat$i.log"
    done
fi
exit $status
