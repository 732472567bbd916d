"""Timing results as rows in the seed's benchmark format (one row per variant and mode), so they load
into tools that read that format (kernel_name, kernel_provider, metric_name, x_values, y_values_20/50/80)."""
from __future__ import annotations

import json

from compare.model.results import Report


def rows(report: Report) -> list[dict]:
    if report.timing is None:
        return []
    by_key: dict[tuple[str, str, str], dict[str, tuple[float, float, float]]] = {}
    for case in report.timing.cases:
        for v in case.variants:
            if v.status == "ok":
                by_key.setdefault((v.variant, case.mode, case.dtype or report.dtype), {})[case.shape] = \
                    (v.p20_ms, v.median_ms, v.p80_ms)
    out = []
    for (variant, mode, dtype), per_shape in by_key.items():
        idx = [i for i, s in enumerate(report.shapes) if s in per_shape]
        values = [per_shape[report.shapes[i]] for i in idx]
        x_values = [report.x_values[i] if report.x_values else i for i in idx]
        out.append({
            "kernel_name": report.family,
            "kernel_provider": variant,
            "metric_name": "speed",
            "metric_unit": "ms",
            "gpu_name": report.timing.gpu,
            "x_name": report.x_name,
            "x_label": report.x_name,
            "x_values": [int(x) if float(x).is_integer() else x for x in x_values],
            "y_values_50": [v[1] for v in values],
            "y_values_20": [v[0] for v in values],
            "y_values_80": [v[2] for v in values],
            "timestamp": report.environment.time_utc,
            "kernel_operation_mode": mode,
            "extra_benchmark_config_str": json.dumps({"preset": report.preset, "dtype": dtype,
                                                      "shapes": [p.values for p in report.shape_params]}),
            "kernel_ab_commit": report.environment.git_commit,
        })
    return out
