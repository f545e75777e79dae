"""The exact command lines tcreport runs for DLProf and Nsight Systems.

Kept apart from the code that runs them so that tests (and ``--dry-run`` style tooling) can check
them as data. Flags are spelled ``--name=value`` in one argv item each, as both tools document them,
which also keeps a value that starts with ``-`` from being read as a flag.
"""

from __future__ import annotations

from pathlib import Path

from tcreport.capture.request import Framework, ProfileRequest

#: DLProf's ``--mode`` per framework; ``simple`` profiles any CUDA program without framework hooks.
DLPROF_MODES = {
    Framework.PYTORCH: "pytorch",
    Framework.TENSORFLOW: "tensorflow2",
    Framework.UNKNOWN: "simple",
}

NSYS_TRACE = "cuda,nvtx,cudnn,cublas"

#: TensorFlow emits an NVTX range per op only when asked, and only NVIDIA's builds (NGC
#: containers) read these variables; nsys needs those ranges to name the ops. Stock TensorFlow
#: ignores them, and the profile command then says so in the report.
TF_NVTX_ENV = {"TF_ENABLE_NVTX_RANGES": "1", "TF_ENABLE_NVTX_RANGES_DETAILED": "1"}


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def script_argv(req: ProfileRequest) -> list[str]:
    return [req.python, str(req.script), *req.script_args]


def dlprof(req: ProfileRequest, framework: Framework) -> list[str]:
    argv = ["dlprof", f"--mode={DLPROF_MODES[framework]}"]
    if req.key_node is not None:
        argv.append(f"--key_node={req.key_node}")
    if req.iter_start is not None:
        argv.append(f"--iter_start={req.iter_start}")
    if req.iter_stop is not None:
        argv.append(f"--iter_stop={req.iter_stop}")
    if req.delay_s is not None:
        argv.append(f"--delay={_seconds(req.delay_s)}")
    if req.duration_s is not None:
        argv.append(f"--duration={_seconds(req.duration_s)}")
    argv += [
        "--reports=all",
        "--formats=csv,json",
        f"--output_path={req.out_dir}",
        f"--profile_name={req.profile_name}",
        "--force=true",
    ]
    return argv + script_argv(req)


def nsys_base(req: ProfileRequest) -> Path:
    return req.out_dir / req.profile_name


#: Trace the kernels inside CUDA graphs one by one. nsys' default records a graph replay as one
#: row and none of its kernels (torch.compile's "reduce-overhead" mode replays graphs), which
#: would leave their time out of every figure. Passed only to an nsys that lists the option.
NSYS_GRAPH_NODES = "--cuda-graph-trace=node"


def nsys_profile(req: ProfileRequest, framework: Framework, graph_nodes: bool = False) -> list[str]:
    argv = [
        "nsys",
        "profile",
        f"--trace={NSYS_TRACE}",
        f"--output={nsys_base(req)}",
        "--force-overwrite=true",
    ]
    if graph_nodes:
        argv.append(NSYS_GRAPH_NODES)
    if framework is Framework.PYTORCH:
        argv.append("--pytorch=autograd-shapes-nvtx")
    return argv + script_argv(req)


def nsys_export(report: Path, sqlite: Path) -> list[str]:
    return [
        "nsys",
        "export",
        "--type=sqlite",
        "--force-overwrite=true",
        f"--output={sqlite}",
        str(report),
    ]


def nsys_env(framework: Framework) -> dict[str, str]:
    return dict(TF_NVTX_ENV) if framework is Framework.TENSORFLOW else {}
