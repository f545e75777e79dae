"""``tcreport batch --executor dask``: the same per-trace work on a Dask cluster (extra ``[cluster]``).

Workers run :func:`tcreport.batch.work.process` and send back the outcome (Arrow tables and the
report text); the coordinating process writes the dataset exactly as with the local process pool,
so both executors give the same files. Workers need tcreport installed and the traces at the same
paths (a shared filesystem), which is how archives on a cluster are usually mounted.
"""

from __future__ import annotations

from collections.abc import Iterator

from tcreport.batch.work import Outcome, Task, process
from tcreport.errors import UsageError


def run(tasks: list[Task], scheduler: str) -> Iterator[Outcome]:
    try:
        from distributed import Client, as_completed
    except ModuleNotFoundError as exc:
        raise UsageError(
            "--executor dask needs Dask: pip install 'tcreport[cluster]' (dask[distributed])"
        ) from exc
    if not tasks:
        return
    try:
        client = Client(scheduler, timeout="10s")  # type: ignore[no-untyped-call]
    except OSError as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from exc
    try:
        futures = client.map(process, tasks, pure=False)
        for fut in as_completed(futures):  # type: ignore[no-untyped-call]
            outcome: Outcome = fut.result()
            yield outcome
    finally:
        client.close()  # type: ignore[no-untyped-call]
