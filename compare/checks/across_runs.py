"""A new run against a saved one (`compare --baseline`, `diff`), case by case, variant by variant.

Cases match by family, shape (its label and parameters), dtype, and input kind and pass (numerics) or
mode (timing); variants by name. Timing: each variant's new rounds against its saved rounds
(stats.ratio_across_runs: the runs were not interleaved), the verdict by stats.decide, the rule of every
report. Numerics: report.json keeps each output's errors against the reference, not the outputs."""
from __future__ import annotations

import torch

from compare.checks import accuracy, stats
from compare.model.errors import UsageError
from compare.model.results import NumericsCase, Report, TimingCase, VariantNumerics
from compare.model.runs import (NumericsAcross, NumericsCaseAcross, NumericsChange, RunsComparison,
                                TimingAcross, TimingCaseAcross, environment_changes)
from compare.model.states import Accuracy, Status, TimingStatus, TimingVerdict

_ACCURACY = {Accuracy.MORE: NumericsChange.MORE, Accuracy.AS: NumericsChange.AS, Accuracy.LESS: NumericsChange.LESS}


def _params(report: Report) -> dict[str, dict]:
    """Each shape label's parameters (empty where the report keeps none)."""
    values = [p.values for p in report.shape_params]
    return {label: values[i] if i < len(values) else {} for i, label in enumerate(report.shapes)}


def _other_shapes(old: Report, new: Report) -> set[str]:
    """The labels both runs have with other parameters under them (say, another eps): not one case."""
    a, b = _params(old), _params(new)
    return {label for label in a.keys() & b.keys() if a[label] and b[label] and a[label] != b[label]}


def refuse_mismatch(saved: Report, saved_name: str, family: str, shapes, dtypes, other: str = "this run") -> None:
    """UsageError (one line) when `other`, a run of `family` on `shapes` and `dtypes`, could share no case with
    `saved`."""
    if saved.family != family:
        raise UsageError(f"{saved_name} is a run of family {saved.family}, {other} of {family}; "
                         "give a saved run of the same family")
    if not set(shapes) & set(saved.shapes) or not set(dtypes) & _dtypes(saved):
        raise UsageError(f"{saved_name} shares no case with {other}: it has shapes {', '.join(saved.shapes)} "
                         f"in {', '.join(sorted(_dtypes(saved)))}; give the same preset (or --shape) and dtype")


def _dtypes(report: Report) -> set[str]:
    cases = [*(report.numerics.cases if report.numerics else ()), *(report.timing.cases if report.timing else ())]
    return {c.dtype or report.dtype for c in cases} or {report.dtype}


def _control(case: TimingCase):
    c = case.control
    if c is None or c.verdict == TimingVerdict.NA:
        return None
    return stats.RatioEstimate(c.ratio, c.ci_low, c.ci_high, c.p_value, c.rounds)


def _withheld(case: TimingCase, name: str) -> str:
    """Why the run's own verdict for `name` was withheld (a foul of its own or of the case's baseline), else ''."""
    fouled = [f for f in case.fouls if f.variant in (name, case.variants[0].variant if case.variants else name)]
    if not fouled:
        return ""
    said = next((c.reason for c in case.comparisons if c.variant == name and c.reason), "")
    return said or f"foul: {fouled[0].variant}: {fouled[0].foul}"


def _estimated(name: str, old: TimingCase, new: TimingCase, confidence: float):
    """`name`'s new samples against its saved ones: (estimate, saved, new), else its TimingAcross saying why not."""
    a = next(v for v in old.variants if v.variant == name)
    b = next(v for v in new.variants if v.variant == name)
    for side, v, case in (("saved", a, old), ("new", b, new)):
        if v.status != TimingStatus.OK:
            return TimingAcross(name, TimingVerdict.NA, reason=f"not timed in the {side} run: {v.reason or v.status}")
        if v.rounds < 2 or v.calls_per_round < 1 or len(v.samples_ms) < v.rounds * v.calls_per_round:
            return TimingAcross(name, TimingVerdict.NA, reason=f"the {side} run's report holds too few of its samples")
        if _withheld(case, name):
            return TimingAcross(name, TimingVerdict.NA, reason=f"the {side} run withheld it ({_withheld(case, name)})")
    ra, rb = (stats.in_rounds(v.samples_ms, v.calls_per_round, v.rounds) for v in (a, b))
    return stats.ratio_across_runs(ra, rb, confidence=confidence), a, b


def _timed_variants(names: list[str], old: TimingCase, new: TimingCase, noise: float,
                    confidence: float) -> tuple[TimingAcross, ...]:
    """Each variant's new samples against its saved ones. The runs were not interleaved, so all of a case's
    variants move alike with the GPU's drift between them: a variant's change counts only beyond the least
    change of the case's other variants (an unchanged one shows the drift alone; a changed one only widens it)."""
    found = {n: _estimated(n, old, new, confidence) for n in names}
    estimates = {n: e[0] for n, e in found.items() if isinstance(e, tuple)}
    controls = [c for c in (_control(old), _control(new)) if c is not None]
    control = max(controls, key=stats.control_deviation) if controls else None
    records = []
    for name, e in found.items():
        if not isinstance(e, tuple):
            records.append(e)
            continue
        est, a, b = e
        others = [x for n, x in estimates.items() if n != name]
        drift = min(others, key=stats.control_deviation) if others else None
        decision = stats.decide(est, noise, control, drift=drift)
        records.append(stats.judged(TimingAcross, name, est, decision, old_median_ms=a.median_ms,
                                    new_median_ms=b.median_ms))
    return tuple(records)


def _matched(what: str, old: Report, new: Report, fields: tuple[str, ...], only: list[str]) -> list[tuple]:
    """(key: shape, dtype and `fields`; saved case, new case) for the `what` cases (timing, numerics) both runs
    have, in the new run's order; a line in `only` for a section or a case of one run alone. Shapes in
    `_other_shapes` are left out (said once, as a shape)."""
    if _sections_missing(what, old, new, only):
        return []
    skip = _other_shapes(old, new)

    def key(report: Report, case) -> tuple[str, ...]:
        return (case.shape, case.dtype or report.dtype, *(getattr(case, f) for f in fields))
    saved = {key(old, c): c for c in getattr(old, what).cases if c.shape not in skip}
    pairs = []
    for case in (c for c in getattr(new, what).cases if c.shape not in skip):
        k = key(new, case)
        if k in saved:
            pairs.append((k, saved.pop(k), case))
        else:
            only.append(f"{what} {' '.join(k)}: only in the new run")
    only.extend(f"{what} {' '.join(k)}: only in the saved run" for k in saved)
    return pairs


def _sections_missing(what: str, old: Report, new: Report, only: list[str]) -> bool:
    missing = [side for side, r in (("saved", old), ("new", new)) if getattr(r, what) is None]
    if missing:
        only.append(f"{what}: in neither run" if len(missing) == 2 else f"{what}: not in the {missing[0]} run")
    return bool(missing)


def _timing(old: Report, new: Report, noise: float, only: list[str]) -> list[TimingCaseAcross]:
    found = []
    for k, before, case in _matched("timing", old, new, ("mode",), only):
        names = [v.variant for v in case.variants if v.variant in {w.variant for w in before.variants}]
        note = "" if before.graph == case.graph else "timed from CUDA graphs in one run, eagerly in the other"
        found.append(TimingCaseAcross(*k, _timed_variants(names, before, case, noise, new.timing.confidence), note))
    return found


def _differing_outputs(a: VariantNumerics, b: VariantNumerics) -> tuple[str, ...]:
    """The outputs whose errors against the reference differ between the runs."""
    saved = {e.output: e for e in a.outputs}
    return tuple(e.output for e in b.outputs if saved.get(e.output) != e) + tuple(
        o for o in saved if o not in {e.output for e in b.outputs})


def _numerics_variant(a: VariantNumerics, b: VariantNumerics, same_inputs: bool, dtype: str) -> NumericsAcross:
    sa, sb = Status(a.status), Status(b.status)
    if not (sa.produced and sb.produced):
        change = (NumericsChange.LOST if sa.produced else NumericsChange.GAINED if sb.produced
                  else NumericsChange.NEITHER)
        return NumericsAcross(a.variant, change, sa, sb)
    differing = _differing_outputs(a, b)
    if same_inputs and not differing:
        return NumericsAcross(a.variant, NumericsChange.SAME_ERRORS, sa, sb)
    judged = accuracy.verdict(a, b, False, getattr(torch, dtype, torch.float32))
    return NumericsAcross(a.variant, _ACCURACY[judged.accuracy], sa, sb, differing, judged.detail)


def _numerics_case(old: NumericsCase, new: NumericsCase, dtype: str) -> NumericsCaseAcross:
    saved = {v.variant: v for v in old.variants}
    same = tuple(old.seeds) == tuple(new.seeds)
    rows = tuple(_numerics_variant(saved[v.variant], v, same, dtype) for v in new.variants if v.variant in saved)
    return NumericsCaseAcross(new.shape, dtype, new.input_kind, new.direction, same, rows)


def _numerics(old: Report, new: Report, only: list[str]) -> list[NumericsCaseAcross]:
    return [_numerics_case(before, case, k[1])
            for k, before, case in _matched("numerics", old, new, ("input_kind", "direction"), only)]


def compare_runs(old: Report, new: Report, old_name: str, new_name: str) -> RunsComparison:
    """The new run against the saved one; UsageError (one line) where they share no case."""
    refuse_mismatch(old, old_name, new.family, new.shapes, _dtypes(new), new_name)
    only = [f"shape {s}: other parameters in the two runs" for s in sorted(_other_shapes(old, new))]
    names_old, names_new = [v.name for v in old.variants], [v.name for v in new.variants]
    only += [f"variant {n}: only in the saved run" for n in names_old if n not in names_new]
    only += [f"variant {n}: only in the new run" for n in names_new if n not in names_old]
    noise = max(r.timing.noise for r in (old, new) if r.timing is not None) if (old.timing or new.timing) else 0.0
    timing = _timing(old, new, noise, only)
    numerics = _numerics(old, new, only)
    if not timing and not numerics:
        raise UsageError(f"{old_name} and {new_name} share no case (family, shape, dtype, input kind or mode); "
                         "give two runs of the same preset, dtype and checks")
    return RunsComparison(new.family, old_name, new_name, old.environment, new.environment,
                          environment_changes(old.environment, new.environment), tuple(timing), tuple(numerics),
                          tuple(only), noise)
