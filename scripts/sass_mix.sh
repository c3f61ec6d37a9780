#!/usr/bin/env bash
# The SASS instruction mix of one CUDA kernel instantiation (needs nvcc and cuobjdump; no GPU: where the
# toolkit lacks cuobjdump, `pip install nvidia-cuda-cuobjdump` puts one under site-packages/nvidia/cu13/bin).
#   scripts/sass_mix.sh v11_autotuned.cu "autotuned<128,256,8,64,64,3,8,0,true,false,false,false>" sm_90
set -euo pipefail
cd "$(dirname "$0")/.."
src=$1 kernel=$2 arch=${3:-sm_90}
tmp=$(mktemp -d)
printf '#include "%s"\nvoid* const tvc_kernel = (void*)&%s;\n' "$src" "$kernel" >"$tmp/k.cu"
nvcc -cubin -arch="$arch" -std=c++17 -Ikernels_cuda -diag-suppress 177 -o "$tmp/k.cubin" "$tmp/k.cu"
cuobjdump -sass "$tmp/k.cubin" >"$tmp/k.sass"
echo "$kernel ($arch): instructions in the SASS, by opcode"
grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P[0-9T] )?[A-Z][A-Z0-9_]*' "$tmp/k.sass" | awk '{print $NF}' | sort | uniq -c | sort -rn | head -20
rm -rf "$tmp"
