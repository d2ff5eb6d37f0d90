#!/usr/bin/env bash
# One device call that produces the GPU figures of a session (run from the repo root on the GPU machine, after
# `. .gpu-bundle/prelude.sh`). Usage: bench/gpu_session.sh OUTDIR [tests|tests-x|tests-rest|tests-compose|mains-precomposed|kernels|models|prepared|prepared-norms|prepared-mem|prepared-gemm|prepared-scan|prepared-split|prepared-ragged|prepared-scan-all|prepared-scan-tma|prepared-flat-pairs|prepared-split-ldg|prepared-occ|ncu|...]...
set -u
out=${1:?outdir}; shift
mkdir -p "$out"
for part in "$@"; do
  case "$part" in
    tests)   timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" --timeout 150 -rfE \
               ${GPU_TESTS:-tests/kernels tests/test_validate_gpu.py} > "$out/gpu_tests.log" 2>&1
             grep -E "passed|failed" "$out/gpu_tests.log" | tail -1; grep -E "^(FAILED|ERROR)" "$out/gpu_tests.log" | cut -c1-200 ;;
    tests-par) # the GPU test files split over ${GPU_PAR:-4} pytest processes sharing the GPU
             files=$(ls tests/kernels/test_*_gpu.py tests/test_validate_gpu.py tests/test_*_gpu.py 2>/dev/null | sort -u)
             n=${GPU_PAR:-4}; i=0; pids=""
             for g in $(seq 0 $((n-1))); do
               grp=$(echo "$files" | awk -v n=$n -v g=$g 'NR%n==g')
               timeout ${TESTS_TIMEOUT:-420} python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" --timeout 200 -rfE \
                 $grp > "$out/gpu_tests_$g.log" 2>&1 & pids="$pids $!"
             done
             wait $pids
             for g in $(seq 0 $((n-1))); do grep -E "passed|failed|error" "$out/gpu_tests_$g.log" | tail -1; done
             grep -hE "^(FAILED|ERROR)" "$out"/gpu_tests_*.log | cut -c1-220 ;;
    tests-x) # every GPU test through pytest-xdist (the bundle carries it); module fixtures stay on one worker
             timeout ${TESTS_TIMEOUT:-420} python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" --timeout 300 -rfE \
               -n ${GPU_PAR:-12} --dist loadgroup ${GPU_TESTS:-tests} > "$out/gpu_tests.log" 2>&1
             pkill -f "pytest" 2>/dev/null; sleep 2  # xdist workers outlive a timed-out controller and share the GPU
             tail -1 "$out/gpu_tests.log"; grep -E "^(FAILED|ERROR)" "$out/gpu_tests.log" | cut -c1-240 ;;
    tests-rest) # every GPU test but the end-to-end composed files (fits one call: 198 s in session 6)
             GPU_TESTS="tests --ignore=tests/test_compose_gpu.py" bash "$0" "$out" tests-x ;;
    mains-precomposed) # every corpus model's composed file (composed on the CPU beforehand by
             # bench/precompose.sh into .precomposed/c.tgz, carried with the call) run with its own __main__, 15 at a
             # time: session 9, 115 files in 83 s. (tests-compose composes on the device inside a pytest fixture,
             # which outran pytest-timeout's 300 s in session 9)
             rm -rf /tmp/pc && mkdir -p /tmp/pc && tar xzf .precomposed/c.tgz -C /tmp/pc
             ls /tmp/pc/composed/*.py | timeout ${MAINS_TIMEOUT:-330} xargs -P ${MAIN_JOBS:-15} -I{} sh -c \
               'r=$(timeout 300 python3 {} 2>&1 | grep -E "^(PASS|FAIL)|Error" | tail -1); echo "$(basename {}) $r"' \
               > "$out/mains.txt" 2>&1
             echo "mains: $(grep -c ' PASS' "$out/mains.txt") PASS of $(ls /tmp/pc/composed/*.py | wc -l)"
             grep -v " PASS" "$out/mains.txt" | cut -c1-200 | head -20 ;;
    tests-compose) # the end-to-end composed-file tests alone (the slow tail of tests-x)
             GPU_TESTS="tests/test_compose_gpu.py" bash "$0" "$out" tests-x ;;
    mains) # every corpus model: compose, then run the composed file's own __main__ (PASS/FAIL count)
             timeout ${MAINS_TIMEOUT:-420} python3 -m tilestudio bench ${BENCH_MODELS:-tests/models/*.py} --no-dry-run --no-validate \
               --jobs 16 --main-jobs ${MAIN_JOBS:-8} --out-dir "$out/composed_all" --json "$out/mains.json" \
               > "$out/mains.txt" 2> "$out/mains.err"; tail -30 "$out/mains.txt" ;;
    variants) # the per-family tile/approach variant scripts (bench/variants_*.py), one after another
             for v in bench/variants_*.py; do
               timeout ${VARIANTS_TIMEOUT:-150} python3 "$v" > "$out/$(basename "$v" .py).txt" 2> "$out/$(basename "$v" .py).err"
               echo "== $v rc=$?"; tail -${VARIANTS_TAIL:-25} "$out/$(basename "$v" .py).txt"
             done ;;
    corpus-all) # the whole corpus: validate + time (vs eager and torch.compile), GPU_JOBS validations in flight
             TORCHINDUCTOR_COMPILE_THREADS=${INDUCTOR_THREADS:-2} timeout ${BENCH_TIMEOUT:-540} python3 -m tilestudio bench \
               ${BENCH_MODELS:-tests/models/*.py} --no-dry-run --jobs 16 --gpu-jobs ${GPU_JOBS:-10} --reps ${REPS:-20} \
               --out-dir "$out/composed" --json "$out/bench.json" --csv "$out/bench.csv" > "$out/bench.txt" 2> "$out/bench.err"
             tail -${BENCH_TAIL:-125} "$out/bench.txt" | cut -c1-150 ;;
    kernels) timeout ${KERNELS_TIMEOUT:-400} python3 bench/kernels.py --warm-jobs ${WARM_JOBS:-12} ${KERNELS_ARGS:-} > "$out/kernels.txt" 2> "$out/kernels.err"; cat "$out/kernels.txt" ;;
    corpus-fused) timeout ${BENCH_TIMEOUT:-420} python3 -m tilestudio bench ${BENCH_MODELS:-tests/models/fused_*.py tests/models/arch_*.py} \
               --no-dry-run --jobs 16 --main-jobs 8 --reps 10 --out-dir "$out/composed_fa" --json "$out/bench_fa.json" \
               > "$out/bench_fa.txt" 2> "$out/bench_fa.err"; tail -45 "$out/bench_fa.txt"; [ -s "$out/bench_fa.txt" ] || grep validated "$out/bench_fa.err" | cut -c1-160 ;;
    models) # bench/models/: larger models (wide recurrences vs cuDNN, ResNet stem, VGG block) end to end
             timeout ${MODELS_TIMEOUT:-420} python3 -m tilestudio bench bench/models/*.py --no-dry-run --jobs 16 \
               --gpu-jobs 4 --reps ${REPS:-20} --out-dir "$out/composed_models" --json "$out/bench_models.json" \
               > "$out/bench_models.txt" 2> "$out/bench_models.err"; tail -12 "$out/bench_models.txt" ;;
    prepared) # the knobs prepared in session 8, off by default, each spill-free in its sm_90 cubin (zero stack
             # frame, bench/sass_widths.py), in three parts of under ~8 minutes each, most promising first.
             # Part 1, tensor cores: num_worker_warps=8 for 128x256 / 256x128 GEMM tiles (cuBLAS's shape; the
             # compiler's warp count spills them: 23.8 ms), 128x128 / 128x64 flash-attention tiles, the
             # implicit-GEMM convs. Each variant is checked against float64 before it is timed
             for only in "mm 8192" "linear+gelu" "sdpa" "mm 4096" "bmm" "conv2d 3x3" "conv2d 1x1"; do
               timeout ${VARIANTS_TIMEOUT:-75} python3 bench/variants_gemm.py --only "$only" --match "8 warps" \
                 >> "$out/prepared_gemm.txt" 2>> "$out/prepared_gemm.err"
             done; grep -E "^(mm|linear|sdpa|bmm|conv)" "$out/prepared_gemm.txt" | cut -c1-120 ;;
    prepared-norms) # part 2: the one-tile group norm and one-pass 32768-float softmax row on 8 worker warps, the
             # two-pass layer norm keeping half of each 65536-float row in registers (read 1.5x, not 2x); then
             # every row-wise case on 8 worker warps against its default
             timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" --timeout 100 -rfE -n 4 \
               tests/kernels/test_norm_group.py > "$out/prepared_tests.log" 2>&1; tail -1 "$out/prepared_tests.log"
             timeout ${VARIANTS_TIMEOUT:-170} python3 bench/variants_rowwise.py --cases "group_norm,32768,layer_norm 2048" \
               --variants default,gn1ww8,single32k_ww8,sresident28k_ww8,resident32k_ww8,resident16k,resident16k_ww8,sresident16k_ww8 --budget 150 \
               > "$out/prepared_rows.txt" 2> "$out/prepared_rows.err"; tail -6 "$out/prepared_rows.txt"
             timeout ${VARIANTS_TIMEOUT:-170} python3 bench/variants_rowwise.py --variants default,ww8occ1 --budget 150 \
               > "$out/prepared_ww8.txt" 2> "$out/prepared_ww8.err"; tail -25 "$out/prepared_ww8.txt" | grep -v "=default$"
             # ragged 1000-class softmax rows (0.67-0.74 of copy): TMA stores clip the 24 padding columns in hardware
             timeout ${VARIANTS_TIMEOUT:-90} python3 bench/variants_rowwise.py --cases "1000" --variants default,tmastore \
               --budget 80 > "$out/prepared_1000.txt" 2> "$out/prepared_1000.err"; tail -5 "$out/prepared_1000.txt" ;;
    prepared-mem) # part 3: the one-pass look-back cumsum (its GPU test first: real concurrency; a hang is killed by
             # the timeouts), cumsum on 8 worker warps; block sizes one step further along session 7's trends
             timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" --timeout 60 -rfE \
               tests/kernels/test_scan_lookback_gpu.py > "$out/prepared_lookback.log" 2>&1
             tail -1 "$out/prepared_lookback.log"; grep -E "^(FAILED|ERROR)" "$out/prepared_lookback.log" | cut -c1-200
             if grep -q " passed" "$out/prepared_lookback.log" && ! grep -qE "failed|error" "$out/prepared_lookback.log"; then
               timeout ${VARIANTS_TIMEOUT:-150} python3 bench/variants_memory.py --only "cumsum" --match "lookback" \
                 > "$out/prepared_scan.txt" 2> "$out/prepared_scan.err"; tail -8 "$out/prepared_scan.txt" | cut -c1-120
             fi
             timeout ${VARIANTS_TIMEOUT:-120} python3 bench/variants_memory.py --only cumsum --match "worker warps" \
               >> "$out/prepared_scan.txt" 2>> "$out/prepared_scan.err"; tail -12 "$out/prepared_scan.txt" | cut -c1-120
             for only in "max_pool2d 3x3/2:smaller" "pad 1,1:smaller" "adaptive_avg:bigger" "cross_entropy:bigger"; do
               timeout ${VARIANTS_TIMEOUT:-90} python3 bench/variants_memory.py --only "${only%%:*}" --match "${only##*:}" \
                 >> "$out/prepared_sizes.txt" 2>> "$out/prepared_sizes.err"
             done; grep -E "smaller|bigger|\*|eager" "$out/prepared_sizes.txt" | cut -c1-120 ;;
    prepared-gemm) # session 9's candidates for the last GEMM gap (linear+gelu at 0.99x eager, mm 8192 0.96 of
             # cuBLAS): the 128x256 / 8-warp default walked by a persistent grid (adopted in session 10), and
             # clusters of 2 (lost)
             for only in "linear+gelu" "mm 8192"; do for m in "persistent 128x256" "ctas=2"; do
               timeout ${VARIANTS_TIMEOUT:-75} python3 bench/variants_gemm.py --only "$only" --match "$m" \
                 >> "$out/prepared_gemm2.txt" 2>> "$out/prepared_gemm2.err"
             done; done; grep -E "^(mm|linear)" "$out/prepared_gemm2.txt" | cut -c1-120 ;;
    prepared-scan) # session 9's tensor-core scans: 16-bit cumsum over a middle dim (scan_mma, adopted in
             # session 10), one-tile float rows (scan_mma_rows, lost)
             for only in "cumsum dim=1" "cumsum 4096x4096" "cumsum 64x1048576"; do
               timeout ${VARIANTS_TIMEOUT:-120} python3 bench/variants_memory.py --only "$only" --match "tensor-core" \
                 >> "$out/prepared_scan_mma.txt" 2>> "$out/prepared_scan_mma.err"
             done; grep -E "cumsum" "$out/prepared_scan_mma.txt" | cut -c1-120 ;;
    prepared-split) # session 9's split rows (split_rows.py; softmax and norm rows in 16384s adopted in session
             # 10, group norm splits lost): the GPU test first (blocks of a row wait on each other through
             # atomics; a hang is killed by the timeouts), then the long norms and softmax rows
             timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" --timeout 60 -rfE \
               tests/kernels/test_split_rows_gpu.py > "$out/prepared_split.log" 2>&1
             tail -1 "$out/prepared_split.log"; grep -E "^(FAILED|ERROR)" "$out/prepared_split.log" | cut -c1-200
             if grep -q " passed" "$out/prepared_split.log" && ! grep -qE "failed|error" "$out/prepared_split.log"; then
               timeout ${VARIANTS_TIMEOUT:-170} python3 bench/variants_rowwise.py --cases "layer_norm 2048,group_norm,131072" \
                 --variants default,split8k,split4k,ssplit8k,ssplit16k --budget 150 > "$out/prepared_split.txt" 2>&1
               tail -4 "$out/prepared_split.txt"
             fi ;;
    prepared-ragged) # session 10's ragged split rows (TUNING["softmax_split_ragged"], ["norm_split_ragged"], off):
             # the split-row GPU test (its ragged_* cases), then GPT-2-vocabulary softmax rows and group norm
             # groups, two-pass vs split
             timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" --timeout 60 -rfE -n 4 \
               tests/kernels/test_split_rows_gpu.py > "$out/prepared_ragged.log" 2>&1
             tail -1 "$out/prepared_ragged.log"; grep -E "^(FAILED|ERROR)" "$out/prepared_ragged.log" | cut -c1-200
             if grep -q " passed" "$out/prepared_ragged.log" && ! grep -qE "failed|error" "$out/prepared_ragged.log"; then
               timeout ${VARIANTS_TIMEOUT:-100} python3 bench/variants_rowwise.py --cases "50257" \
                 --variants default,ssplit_ragged,ssplit8k --budget 80 > "$out/prepared_ragged.txt" 2>&1
               tail -3 "$out/prepared_ragged.txt"
               # group norm groups split with a short last segment (norm_split_ragged)
               timeout ${VARIANTS_TIMEOUT:-100} python3 bench/variants_rowwise.py --cases "group_norm" \
                 --variants default,gnsplit16k_ragged,gnsplit8k_ragged --budget 80 > "$out/prepared_gn.txt" 2>&1
               tail -3 "$out/prepared_gn.txt"
             fi ;;
    prepared-scan-all) # session 10's look-back rows reading every earlier total at once (scan_lookback_all,
             # off): its GPU test first, then cumsum 64x1048576 fp32 against the segmented default
             timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" --timeout 60 -rfE -n 4 \
               tests/kernels/test_scan_lookback_gpu.py -k reading_all > "$out/prepared_scan_all.log" 2>&1
             tail -1 "$out/prepared_scan_all.log"; grep -E "^(FAILED|ERROR)" "$out/prepared_scan_all.log" | cut -c1-200
             if grep -q " passed" "$out/prepared_scan_all.log" && ! grep -qE "failed|error" "$out/prepared_scan_all.log"; then
               timeout ${VARIANTS_TIMEOUT:-120} python3 bench/variants_memory.py --only "cumsum 64x1048576" \
                 --match "all earlier" > "$out/prepared_scan_all.txt" 2>&1; grep cumsum "$out/prepared_scan_all.txt" | cut -c1-120
             fi ;;
    prepared-scan-tma) # session 11's plain chunk loads for chunked scans (MEMORY_TUNING["scan_chunk_tma"], off): the
             # long-row and middle-dim cumsums against the default, then the row-wise scan GPU tests with it on
             timeout 70 python3 bench/variants_memory.py --only "cumsum 64x1048576" --match "plain" > "$out/vscan1.txt" 2>&1
             grep cumsum "$out/vscan1.txt" | tail -4 | cut -c1-130
             timeout 50 python3 bench/variants_memory.py --only "cumsum dim=1" --match "plain" > "$out/vscan2.txt" 2>&1
             grep cumsum "$out/vscan2.txt" | tail -3 | cut -c1-130
             timeout 110 python3 -c "
import sys, pytest
from tilestudio.core.kernels.indexing import MEMORY_TUNING as M
M['scan_chunk_tma'] = False
sys.exit(pytest.main(['-m', 'gpu', '-q', '-p', 'no:cacheprovider', '-o', 'addopts=', '--timeout', '100', '-rfE',
                      'tests/kernels/test_rowwise_families_gpu.py', '-k', 'scan']))" > "$out/scan_tma_tests.log" 2>&1
             tail -1 "$out/scan_tma_tests.log"; grep -E "^(FAILED|ERROR)" "$out/scan_tma_tests.log" | cut -c1-200 ;;
    prepared-flat-pairs) # session 11's flat output for max_pool(3, 2, 1) pair windows (pool_pairs_flat, off): its GPU
             # test, then the float32 ResNet-stem-sized pool against the tile form
             timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider -o addopts="" --timeout 90 -rfE -n 4 \
               tests/kernels/test_pool_gpu.py -k "pair_windows_flat" > "$out/flat_pairs.log" 2>&1
             tail -1 "$out/flat_pairs.log"; grep -E "^(FAILED|ERROR)" "$out/flat_pairs.log" | cut -c1-200
             timeout 80 python3 bench/variants_memory.py --only "max_pool2d 3x3/2 32x128" --match "flat" \
               > "$out/vflat_pairs.txt" 2>&1; grep max_pool "$out/vflat_pairs.txt" | tail -5 | cut -c1-130 ;;
    prepared-split-ldg) # session 11's plain chunk loads for split rows (TUNING["split_chunk_tma"], off): the split-row
             # GPU test with it on, then layer_norm 2048x65536 and softmax 2048x131072 against the TMA default
             timeout 150 python3 -c "
import sys, pytest
from tilestudio.core.kernels.rowwise import TUNING
TUNING['split_chunk_tma'] = False
sys.exit(pytest.main(['-m', 'gpu', '-q', '-p', 'no:cacheprovider', '-o', 'addopts=', '--timeout', '100', '-rfE',
                      'tests/kernels/test_split_rows_gpu.py', '-k', 'not ragged_group']))" > "$out/split_ldg_tests.log" 2>&1
             tail -1 "$out/split_ldg_tests.log"; grep -E "^(FAILED|ERROR)" "$out/split_ldg_tests.log" | cut -c1-200
             timeout 100 python3 bench/variants_rowwise.py --cases "layer_norm 2048,131072" \
               --variants default,split_ldg --budget 80 > "$out/split_ldg.txt" 2>&1; tail -4 "$out/split_ldg.txt" ;;
    prepared-occ) # session 12's occupancy candidates (Nsight Compute found both cases at low occupancy): stacked
             # softmax rows of 1000 at 6 blocks per SM (variant occ6stacked), then the segmented scans' hints
             # (scan_totals_occupancy / scan_segment_occupancy, off): both cumsum cases against the default and the
             # row-wise scan GPU tests with the hints on
             timeout 80 python3 bench/variants_rowwise.py --cases "softmax rows 16384x1000,softmax rows 65536x1000" \
               --variants default,occ6stacked --budget 60 > "$out/vocc6.txt" 2>&1; tail -4 "$out/vocc6.txt"
             timeout 90 python3 bench/variants_memory.py --only "cumsum 64x1048576" --match "occupancy" \
               > "$out/vscan_occ1.txt" 2>&1; grep cumsum "$out/vscan_occ1.txt" | tail -6 | cut -c1-130
             timeout 60 python3 bench/variants_memory.py --only "cumsum dim=1" --match "occupancy" \
               > "$out/vscan_occ2.txt" 2>&1; grep cumsum "$out/vscan_occ2.txt" | tail -4 | cut -c1-130
             timeout 110 python3 -c "
import sys, pytest
from tilestudio.core.kernels.indexing import MEMORY_TUNING as M
M['scan_totals_occupancy'], M['scan_segment_occupancy'] = 4, 3
sys.exit(pytest.main(['-m', 'gpu', '-q', '-p', 'no:cacheprovider', '-o', 'addopts=', '--timeout', '100', '-rfE',
                      'tests/kernels/test_rowwise_families_gpu.py', '-k', 'scan']))" > "$out/scan_occ_tests.log" 2>&1
             tail -1 "$out/scan_occ_tests.log"; grep -E "^(FAILED|ERROR)" "$out/scan_occ_tests.log" | cut -c1-200 ;;
    ncu) # Nsight Compute (on the device image at /usr/local/cuda/bin/ncu; counters readable, session 12) over one
             # kernels.py case run by launch_split.py: throughput, occupancy limits and warp stall reasons of the
             # kernels matching NCU_KERNEL (a regex), e.g. NCU_CASE="cumsum 64x1048576" NCU_KERNEL="^cumsum_kernel";
             # NCU_SET="key=value ..." profiles a variant (launch_split.py --set), NCU_TAG names the output ncu$TAG.txt
             (cd bench && timeout ${NCU_TIMEOUT:-120} /usr/local/cuda/bin/ncu -k "regex:${NCU_KERNEL:-.}" -c ${NCU_COUNT:-1} \
               --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
               python3 launch_split.py --only "${NCU_CASE:?set NCU_CASE}" --reps 1 ${NCU_SET:+$(printf -- '--set %s ' $NCU_SET)}) \
               > "$out/ncu${NCU_TAG:-}.txt" 2>&1
             grep -E "==PROF==|==ERROR==|Duration|DRAM Throughput|Compute \(SM\)|Registers Per|Block Limit (Reg|Shared)|Theoretical Occ|Achieved Occ|L2 Hit Rate|Mem Busy|stalled|represents" \
               "$out/ncu${NCU_TAG:-}.txt" | cut -c1-160 | head -40 ;;
    corpus-op) timeout 420 python3 -m tilestudio bench tests/models/op_*.py --no-dry-run --no-torch-compile \
               --jobs 16 --main-jobs 8 --reps 10 --out-dir "$out/composed_op" --json "$out/bench_op.json" \
               > "$out/bench_op.txt" 2> "$out/bench_op.err"; tail -82 "$out/bench_op.txt" ;;
  esac
done
