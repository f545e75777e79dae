"""Each kernel's Tensor Core ground truth in the ncu3_*.csv files, as a Markdown table.

Independent of tcreport on purpose (standard library only): it is the oracle the tests compare
tcreport's counter verdict with. A kernel used the Tensor Cores when Nsight Compute counted math
operations on the tensor path (sum of the ``sm__ops_path_tensor_src_*.sum`` columns > 0). The
table also shows the tensor-pipe instructions and how many of them were HFMA2.MMA moves
(``..._op_hmma_type_hfma2``), which is why "any tensor-pipe counter > 0" is not the verdict.

    python make/ground_truth.py ncu/ncu3_mix.csv ncu/ncu3_cnn_fp32.csv ... > table.md
"""

import csv
import sys

PIPE = "sm__inst_executed_pipe_tensor.sum"
HFMA2 = "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum"


def number(text):
    t = text.replace(",", "").strip()
    try:
        return float(t)
    except ValueError:
        return 0.0


def rows(path):
    with open(path, encoding="utf-8", newline="") as fh:
        lines = [ln for ln in fh if not ln.startswith("==")]
    # the profiled program's own output (stdout) can precede the table: start at its header
    first = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), 0)
    table = list(csv.reader(lines[first:]))
    head = table[0]
    for r in table[2:]:  # row 1 is the units row of --page raw
        if len(r) == len(head) and r[0]:
            yield dict(zip(head, r))


def main(paths):
    print("| file | kernel (ncu's name, cut at 90) | launches | tensor-pipe inst | of them HFMA2.MMA "
          "| tensor-path ops | Tensor Cores |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    for path in paths:
        per = {}
        for r in rows(path):
            ops = sum(number(v) for k, v in r.items()
                      if k.startswith("sm__ops_path_tensor_") and k.endswith(".sum"))
            # one row per (kernel, verdict): the two Triton tile_product launches differ
            a = per.setdefault((r["Kernel Name"], ops > 0), [0, 0.0, 0.0, 0.0, 0.0])
            a[0] += 1
            a[1] += number(r.get("gpu__time_duration.sum", "0"))
            a[2] += number(r.get(PIPE, "0"))
            a[3] += number(r.get(HFMA2, "0"))
            a[4] += ops
        name = path.rsplit("/", 1)[-1]
        for (kernel, _), (n, _, pipe, hfma2, ops) in sorted(per.items(), key=lambda kv: -kv[1][1]):
            shown = kernel[:90].replace("|", "\\|")
            verdict = "yes" if ops > 0 else "no"
            print(f"| {name} | `{shown}` | {n} | {pipe:,.0f} | {hfma2:,.0f} | {ops:,.0f} | {verdict} |")


if __name__ == "__main__":
    main(sys.argv[1:])
