#!/usr/bin/env python3
"""plot_bench.py: bandwidth of the insertion ops against token count, as a fraction of a copy.

Reads the JSON that kvconform-bench writes (--benchmark_out=FILE --benchmark_out_format=json) and
draws one panel per record format: for each library (--kernels, and --against when the run had
one) and timing mode, the op's effective bandwidth over the bandwidth of a device-to-device copy
of the same bytes, measured in the same run (the row's copy_ratio counter). 1.0 is the copy.

    python3 bench/plot_bench.py bench.json --out bench_ratio      # writes bench_ratio.png/.svg
    python3 bench/plot_bench.py bench.json --op legacy --heads 8  # the legacy op instead
    python3 bench/plot_bench.py bench.json --markdown summary.md  # also the results-log tables

The markdown tables need no matplotlib; with --no-plot only they are written.
"""
import argparse
import json
import sys
from collections import defaultdict

FORMATS = ["packed584", "packed528", "fp8_512", "bf16_512"]
MODE_STYLE = {"cold": "-", "hot": "--", "graph": ":"}
LIBRARY_COLOUR = {"kernels": "tab:blue", "against": "tab:orange"}


def parse_row(row):
    """The fields of a GPU row's name: gpu/<op>/<format>[/hp:H]/tokens:N/<mode>[/against]."""
    parts = row["name"].split("/")
    if parts and parts[-1] == "manual_time":
        parts = parts[:-1]
    if len(parts) < 5 or parts[0] != "gpu":
        return None
    fields = {"op": parts[1], "format": parts[2], "library": "kernels", "heads": None}
    for part in parts[3:]:
        if part.startswith("hp:"):
            fields["heads"] = int(part[3:])
        elif part.startswith("tokens:"):
            fields["tokens"] = int(part[7:])
        elif part in MODE_STYLE:
            fields["mode"] = part
        elif part == "against":
            fields["library"] = "against"
    if "tokens" not in fields or "mode" not in fields:
        return None
    return fields


def collect(benchmarks, op, heads):
    """{format: {(library, mode): [(tokens, copy_ratio), ...]}} for rows that ran."""
    series = defaultdict(lambda: defaultdict(list))
    for row in benchmarks:
        if row.get("run_type", "iteration") != "iteration" or row.get("error_occurred"):
            continue
        fields = parse_row(row)
        if fields is None or fields["op"] != op or "copy_ratio" not in row:
            continue
        if op == "legacy" and fields["heads"] != heads:
            continue
        series[fields["format"]][(fields["library"], fields["mode"])].append((fields["tokens"], row["copy_ratio"]))
    for per_format in series.values():
        for points in per_format.values():
            points.sort()
    return series


def gpu_rows(benchmarks):
    """{(op, format, heads, tokens, mode, library): row} for GPU rows that ran."""
    rows = {}
    for row in benchmarks:
        if row.get("run_type", "iteration") != "iteration" or row.get("error_occurred"):
            continue
        fields = parse_row(row)
        if fields is not None:
            key = (fields["op"], fields["format"], fields["heads"], fields["tokens"], fields["mode"], fields["library"])
            rows[key] = row
    return rows


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def markdown_tables(report, heads):
    """The results log's tables (docs/results/): per format and size, the KV-only op against the copy and the legacy
    op, the graph-replay time per call, the fused kv_norm gain; then the oracle's throughput."""
    benchmarks = report.get("benchmarks", [])
    rows = gpu_rows(benchmarks)
    context = report.get("context", {})
    lines = []
    if rows:
        lines.append(f"Device: {context.get('kvc_device', '?')}. Kernels: {context.get('kvc_kernels', '?')}. "
                     f"Median of {context.get('kvc_runs', '?')} runs, cold L2 unless noted.")
        lines.append("")
        lines.append(f"| format | tokens | KV-only us | GB/s | of copy | legacy Hp={heads} us | KV-only speedup "
                     "| graph us/call | fused kv_norm speedup |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        sizes = sorted({k[3] for k in rows})
        for f in [x for x in FORMATS if any(k[1] == x for k in rows)]:
            for n in sizes:
                kv = rows.get(("kv_only", f, None, n, "cold", "kernels"))
                if kv is None:
                    continue
                legacy = rows.get(("legacy", f, heads, n, "cold", "kernels"))
                graph = rows.get(("kv_only", f, None, n, "graph", "kernels"))
                unfused = rows.get(("kv_norm_unfused", f, None, n, "cold", "kernels"))
                lines.append("| " + " | ".join([
                    f, str(n), fmt(kv.get("median_us"), ".2f"), fmt(kv.get("GBps"), ".0f"), fmt(kv.get("copy_ratio"), ".2f"),
                    fmt(legacy and legacy.get("median_us"), ".2f"), fmt(legacy and legacy.get("kv_only_speedup"), ".2f"),
                    fmt(graph and graph.get("median_us"), ".2f"), fmt(unfused and unfused.get("fused_speedup"), ".2f")]) + " |")
    oracle = [r for r in benchmarks if r.get("name", "").startswith("oracle/") and not r.get("error_occurred")
              and r.get("run_type", "iteration") == "iteration"]
    if oracle:
        lines.append("")
        lines.append("| oracle (CPU) | tokens/s |")
        lines.append("|---|---:|")
        for r in oracle:
            name = r["name"].removesuffix("/real_time").removeprefix("oracle/")
            lines.append(f"| {name} | {r.get('tokens_per_second', 0):,.0f} |")
    return "\n".join(lines) + "\n"


def plot(report, op, heads, out_prefix):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    context = report.get("context", {})
    series = collect(report.get("benchmarks", []), op, heads)
    if not series:
        print(f"plot_bench: no successful gpu/{op} rows with a copy_ratio in the JSON: nothing to plot", file=sys.stderr)
        return 1
    formats = [f for f in FORMATS if f in series] + sorted(f for f in series if f not in FORMATS)
    columns = 2 if len(formats) > 1 else 1
    rows = (len(formats) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(6.4 * columns, 4.2 * rows), squeeze=False, sharey=True)
    names = {"kernels": context.get("kvc_kernels", "kernels"), "against": context.get("kvc_against", "against")}
    for ax, fmt in zip(axes.flat, formats):
        order = {"kernels": 0, "against": 1, "cold": 0, "hot": 1, "graph": 2}
        for (library, mode), points in sorted(series[fmt].items(), key=lambda kv: (order[kv[0][0]], order[kv[0][1]])):
            tokens = [t for t, _ in points]
            ratio = [r for _, r in points]
            ax.plot(tokens, ratio, linestyle=MODE_STYLE[mode], marker="o", markersize=3,
                    color=LIBRARY_COLOUR[library], label=f"{names[library].split(' (')[0]} ({mode})")
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_title(fmt)
        ax.set_xlabel("tokens")
        ax.set_ylabel("bandwidth / copy bandwidth")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, handlelength=3.5)
    for ax in list(axes.flat)[len(formats):]:
        ax.set_visible(False)
    what = f"{op} (Hp={heads})" if op == "legacy" else op
    fig.suptitle(f"{what}: effective bandwidth relative to a device copy of the same bytes\n"
                 f"{context.get('kvc_device', '')}", fontsize=9)
    fig.tight_layout()
    for ext in ("png", "svg"):
        path = f"{out_prefix}.{ext}"
        fig.savefig(path, dpi=130)
        print(f"plot_bench: wrote {path}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="kvconform-bench --benchmark_out JSON file")
    parser.add_argument("--out", default="bench_ratio", help="output path without extension (.png and .svg are written)")
    parser.add_argument("--op", default="kv_only", choices=["kv_only", "legacy", "kv_norm_fused", "kv_norm_unfused"])
    parser.add_argument("--heads", type=int, default=8, help="legacy op: which head count to plot")
    parser.add_argument("--markdown", help="also write the summary tables (markdown) to this file")
    parser.add_argument("--no-plot", action="store_true", help="write only the --markdown tables")
    args = parser.parse_args(argv)
    with open(args.json) as f:
        report = json.load(f)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown_tables(report, args.heads))
        print(f"plot_bench: wrote {args.markdown}")
    if args.no_plot:
        return 0
    return plot(report, args.op, args.heads, args.out)


if __name__ == "__main__":
    sys.exit(main())
