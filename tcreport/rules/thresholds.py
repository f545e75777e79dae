"""Every threshold a rule uses, in one place, with the reason for its value.

Savings are floors built from conservative assumptions; each rule states its assumption in the
finding. Changing a value here changes when a rule fires; ``docs/findings.md`` quotes these values.
"""

from __future__ import annotations

from tcreport.analysis import derived, host_wait, timeline

# --- Tensor Cores and precision --------------------------------------------------------------------

#: Speed-up assumed when an eligible op moves to Tensor Cores (fp16/bf16 or TF32). NVIDIA's
#: mixed-precision guide reports 2-8x on GEMM/conv-bound layers; 2x is the conservative end, so the
#: estimated saving is a floor, not a promise.
TC_SPEEDUP = 2.0

#: Below this share of kernel time with a known verdict, the Tensor Core share is not trustworthy.
MIN_CLASSIFIED_SHARE = 0.9

#: An op group at or above this share of GPU kernel time is ranked high severity; below, medium.
HIGH_SEVERITY_SHARE = 0.10

#: A single op type that cannot use Tensor Cores at or above this share of GPU kernel time is worth
#: a finding: once the GEMMs and convolutions are on Tensor Cores, what is left is these ops (the
#: resize/upsample ops of segmentation models are the classic ~10 % after switching to float16).
HEAVY_NON_TC_SHARE = 0.10

#: Assumed reduction of a heavy non-Tensor-Core op type from fusing it or replacing it (compiler
#: fusion, nearest-neighbour instead of bicubic resize): these ops are memory bound, and fusing two
#: memory-bound passes into one halves the traffic. A floor, stated in the finding.
NON_TC_REDUCTION = 0.5

#: Dynamic loss scaling (unscale, inf/nan check, scale update) at or above this share of GPU kernel
#: time means the model is so small that the scaler's fixed per-step cost dominates; in a normal
#: model it is well under 1 %.
LOSS_SCALE_SHARE = 0.05

#: Weight/data-gradient convolution kernels in fp16 without Tensor Cores at or above this share of
#: GPU kernel time: cuDNN fell back to a slow CUDA-core algorithm for the backward pass.
SLOW_WGRAD_SHARE = 0.10

#: cuDNN's NCHW <-> NHWC transposes at or above this share of GPU kernel time: pure overhead of a
#: channels-first model (27 % on the H200 sample's float16 CNN), high at twice it.
LAYOUT_CONVERSION_SHARE = 0.05

# --- iterations --------------------------------------------------------------------------------------

#: Per-iteration statistics need at least this many aggregated iterations to mean anything.
MIN_ITERATIONS = 3

#: A first aggregated iteration this many times the median of the others is warm-up: decided in
#: the analysis (the rows' outlier flag reads it too); steady steps vary by a few per cent, 2x
#: cannot be noise.
WARMUP_RATIO = derived.WARMUP_RATIO

#: Coefficient of variation (std / mean) of aggregated iteration times above which steps are not
#: steady: recompilation for new shapes, data stalls, host synchronisation or garbage collection.
#: Steady training steps vary by a few per cent.
ITERATION_CV = 0.20

#: Compilation ranges (XLA, torch.compile) covering at least this share of the aggregated wall
#: time are worth a finding: a few per cent skews every share; less is noise (Dynamo's per-frame
#: guards run on every step).
COMPILE_SHARE = 0.05

# --- GPU utilisation and launches -------------------------------------------------------------------

#: GPU busy below this share of the aggregated wall time: the GPU waits more than it works.
LOW_UTILISATION = 0.5

#: Data-loader ranges covering at least this share of the aggregated wall time, while the GPU is
#: not saturated, make the input pipeline a bottleneck worth naming.
DATA_LOADER_SHARE = 0.10

#: Named host ranges/ops holding at least this share of the aggregated steps' GPU idle explain it
#: (GP001 then names them, claims their idle and points the fix at them); each is listed from
#: HOST_WAIT_LISTED_SHARE of the idle. Decided in the analysis (analysis.host_wait), where the
#: reasons are.
HOST_WAIT_SHARE = host_wait.DOMINANT_SHARE
HOST_WAIT_LISTED_SHARE = host_wait.LISTED_SHARE

#: Kernels shorter than this are launch-overhead dominated (reason in analysis.time.timeline).
SHORT_KERNEL_NS = timeline.SHORT_KERNEL_NS

#: Idle gaps shorter than this count as CPU launch gaps (reason in analysis.time.timeline).
LAUNCH_GAP_NS = timeline.LAUNCH_GAP_NS

#: Launch-bound needs most launches short ...
LAUNCH_BOUND_SHORT_SHARE = 0.5
#: ... and launch gaps to idle the GPU for at least a quarter of the kernel span ...
LAUNCH_BOUND_IDLE_SHARE = 0.25
#: ... over enough launches for the statistics to mean something (about one forward pass of a
#: small transformer; fewer is a handful of kernels whose gaps say little).
LAUNCH_BOUND_MIN_LAUNCHES = 50

#: Share of launch-gap idle time assumed recoverable with CUDA graphs / compilation: graph replay
#: removes the CPU's per-launch cost, but not the GPU's own inter-kernel time or uncapturable work.
LAUNCH_GAP_RECOVERABLE = 0.5

# --- communication (CM001, CM002) -----------------------------------------------------------------

#: Communication is a visible slice of the step at this share: Nsight-based tools flag it there, and
#: below it overlap tuning buys little. One bound for both rules, against the figure each has: CM001
#: fires when collective kernels take this share of GPU kernel time (no timestamps needed); CM002
#: (which fires from COMM_MIN_SHARE of the kernel span) is high severity when the exposed collective
#: time reaches this share of the kernel span.
COMM_SHARE = 0.05

#: Collectives below this share of the kernel span are not worth a CM002 finding: a final all-reduce
#: of a few hundred microseconds in a second-long step is noise.
COMM_MIN_SHARE = 0.01

#: Below this share of collective time hidden under compute, overlap is low. DDP and FSDP are
#: designed to hide most gradient communication behind backward compute; under half means the
#: collectives mostly serialise with it.
COMM_LOW_OVERLAP = 0.5

#: Share of exposed (not overlapped) collective time assumed recoverable by overlapping it with
#: compute (collectives on their own stream, DDP bucket sizes, FSDP prefetch, async collectives):
#: compute must exist to hide them under, and some (the last bucket, the first gather) stays
#: exposed, so a floor, never all of it. Both rules' savings use it.
COMM_RECOVERABLE = 0.5

# --- step stalls (host synchronisation, pageable and tiny copies) ----------------------------------

#: A stall is worth a finding when the GPU idle it causes is at least this share of the GPU step
#: time (each step's window on the GPU): a 1 % loss on every step is what a reviewer would fix; a
#: pageable input copy idling the GPU 0.4 ms in a 176 ms step is not.
STALL_MIN_SHARE = 0.01

#: Host-device copies per step and GPU under ``analysis.stalls.TINY_COPY_BYTES`` from which they
#: are "many": each costs a launch (~5-10 µs) and often a sync for a few bytes; a handful per
#: step (a loss read back, a learning rate sent) is normal.
TINY_COPIES_PER_STEP = 10

#: Share of a stall's idle the fix recovers (the host queues ahead instead of waiting for the GPU
#: to drain): the rest of the gap is the host's own work, which the fix does not remove. A floor.
STALL_RECOVERABLE = 0.5

# --- distributed jobs (DJ001) ---------------------------------------------------------------------

#: The ranks' median collective wait (time in collectives beyond the least any rank spent, per
#: iteration) at this share of the job's step time is load imbalance worth fixing: the fast ranks
#: idle in NCCL for the slow one every step. A few per cent is launch skew and kernel jitter
#: between GPUs that no rebalancing removes.
COLLECTIVE_WAIT_SHARE = 0.05

#: ... and at this share it is high severity: a quarter of every step lost to one slow rank.
COLLECTIVE_WAIT_HIGH_SHARE = 0.25

#: Share of the collective wait assumed recoverable by evening out the work: the straggler's extra
#: time rarely all goes (some ranks do more by design: the first pipeline stage, rank 0's logging),
#: so half, a floor stated in the finding.
COLLECTIVE_WAIT_RECOVERABLE = 0.5
# --- Model audit (``tcreport profile``'s in-process facts) -----------------------------------------

#: The model audit's layer sizes are judged by the trace's padding rule
#: (:func:`tcreport.analysis.shapes.unaligned`, multiples of ``shapes.ALIGN``), so AU001 and TC003
#: pad the same layer alike: every size counts, a 3-channel image input too.
