"""Resolving a request once into a plan, and moving compare/ into one-way layers, changed no report: the
default compare, the seed preset's compiled-code comparison and one review of the Liger-Kernel corpus
(../shared/corpus, or $KERNEL_AB_CORPUS) give the report recorded before the change, key for key.

What may differ between two runs and is left out of the comparison: the environment's host, software
and provenance fields (every `environment` key but `device`: git commit and dirtiness, command line,
date, platform, versions, GPU, driver, clocks), measured durations (`compile_seconds`, `audit_seconds`) and fields added
since the recording where they hold their default (`ADDED`); a float equals its golden to a relative 1e-6
(`FLOAT_REL`: host-to-host rounding). The goldens are those normalized reports,
gzipped (tests/golden/plan_equivalence/). Fields added later with content (the IR's pointer names and pass
notes) and the derived headline's words were taken into them from a run equal to them in every other key.
A golden of an older schema is brought up to date by the model's own migrations (compare/model/migrations.py:
schema 4 holds each shape's parameters as an object, not JSON text), and the derived `verdicts` (the glance's
rows, read off the rest as the headline is) are left out of both sides.
"""
from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
from pathlib import Path

import pytest

import main

GOLDEN = Path(__file__).parent / "golden" / "plan_equivalence"
CORPUS = Path(os.environ.get("KERNEL_AB_CORPUS") or Path(__file__).resolve().parents[1].parent / "shared" / "corpus")
BUNDLE = CORPUS / "liger-kernel-prs.bundle"
KEPT_ENVIRONMENT = ("device",)   # the backend the run chose: behaviour, not host
DURATIONS = ("compile_seconds", "audit_seconds")
# fields the model gained after the recording, and the value saying nothing happened (a failure's kind)
ADDED = {"failure": "", "failed_at": "", "fouls": [], "needs": None, "library": [], "replayed": [], "left_out": [],
         "stopped": False, "judged_through": []}
# ... and those of schema 4, where a report's `interrupted` (no stop) is null and a skip's (not by a stop) false
ADDED_NONE = {"interrupted": (None, False)}
# the review's fields and lines added since that vary run to run (the budget's seconds used) or say what the
# default dtypes left out (the CPU's bfloat16, then compared by no default)
SINCE = ("budget", "dtypes_left_out")


def _nothing(key: str, value) -> bool:
    """Whether `value` of a field added since the recording says nothing happened."""
    return (key in ADDED and value == ADDED[key]) or (key in ADDED_NONE and value in ADDED_NONE[key])
# the recorded runs (at commit 80aadd0, the CPU interpreter, offline IR for sm_90; the review at c89c9c1)
RUNS = {
    "default": ["compare"],
    "seed_ir": ["compare", "--preset", "seed", "--check", "ir", "--check", "timing", "--dtype", "float32,bfloat16",
                "--trials", "1"],
}


def migrated(report: dict) -> dict:
    """`report` at the current schema version, as `from_dict` migrates a saved report before loading it."""
    from compare.model.migrations import MIGRATIONS
    while report.get("schema_version") in MIGRATIONS:
        report = MIGRATIONS[report["schema_version"]](json.loads(json.dumps(report)))
    return report


RAW_COUNTS = ("raw_changed_lines", "raw_diff_lines")
# a float metric may differ in its 9th digit from host to host: the float64 reference's reductions round as the
# CPU's vector unit adds (AVX-512 here, AVX2 there); a change of behaviour moves it by far more, or a verdict
FLOAT_REL = 1e-6


def normalized(report: dict) -> dict:
    """`report` less what differs from run to run and host to host (see the module docstring), at the current
    schema version, without the derived verdicts."""
    report = {k: v for k, v in migrated(report).items() if k != "verdicts"}
    def strip(value):
        if isinstance(value, dict):
            # a raw PTX listing carries the DWARF bytes of the source files' paths (the checkout's, the
            # interpreter's, whichever compiled first into Triton's shared cache): its raw counts are the host's
            host = RAW_COUNTS if value.get("stage") == "ptx" else ()
            return {k: strip(v) for k, v in value.items()
                    if k not in DURATIONS and k not in host and not _nothing(k, v)}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    out = strip(report)
    out["environment"] = {k: v for k, v in report["environment"].items() if k in KEPT_ENVIRONMENT}
    return out


def normalized_review(review: dict) -> dict:
    """A `review --json` document less what differs between runs: each compared op's report normalized, and
    the reviewed commits' ids (the corpus bundle, rebuilt, gives the same trees other ids) named by side."""
    compared = [{**{k: v for k, v in c.items() if not _nothing(k, v)},
                 "report": normalized(c["report"]) if c["report"] else None} for c in review["compared"]]
    kept = {k: v for k, v in review.items() if not _nothing(k, v) and k not in ("base", "head", *SINCE)}
    dtypes = {f"{', '.join(d['dtypes'])} not compared {d['where']}" for d in review.get("dtypes_left_out", [])}
    kept["lines"] = [line for line in kept["lines"] if line["text"].split(":")[0] not in dtypes]
    ids = {review["base"]: "BASE", review["head"]: "HEAD", review["base"][:7]: "BASE", review["head"][:7]: "HEAD"}

    def sided(value):
        if isinstance(value, dict):
            return {k: sided(v) for k, v in value.items()}
        if isinstance(value, list):
            return [sided(v) for v in value]
        if isinstance(value, str):
            for commit, side in ids.items():   # full ids first: a short one is their prefix
                value = value.replace(commit, side)
        return value
    return sided({**kept, "compared": compared})


def first_difference(a, b, path: str = "") -> str:
    """Where `a` and `b` first differ, for a failure message that points at the key."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(dict.fromkeys([*a, *b])):
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'golden' if k in a else 'run'}"
            found = first_difference(a[k], b[k], f"{path}.{k}")
            if found:
                return found
        return ""
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items in golden, {len(b)} in run"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := first_difference(x, y, f"{path}[{i}]"))), "")
    if isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=FLOAT_REL, abs_tol=1e-300):
        return ""
    return "" if a == b else f"{path}: golden {a!r}, run {b!r}"


def test_the_normalizer_drops_only_host_fields_and_durations():
    report = {"environment": {"device": "cpu", "time_utc": "now", "command": "c"}, "family": "f",
              "timing": {"compile_seconds": [["a", 1.0]], "noise": 0.01}}
    assert normalized(report) == {"environment": {"device": "cpu"}, "family": "f", "timing": {"noise": 0.01}}
    failed = {"environment": {}, "v": [{"failure": "", "failed_at": ""}, {"failure": "call", "failed_at": ""}]}
    assert normalized(failed)["v"] == [{}, {"failure": "call"}]   # a failure's kind is kept where there is one
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == ".a[1].b: golden 2, run 3"
    assert first_difference({"r": 5.6472410758e-08}, {"r": 5.6472410731e-08}) == ""   # rounding, host to host
    assert first_difference({"r": 5.6472e-08}, {"r": 5.6480e-08}) == ".r: golden 5.6472e-08, run 5.648e-08"


@pytest.mark.slow   # about 60 s on the 2-core machine: numerics of three shapes and every input kind, and the IR
def test_the_default_compare_gives_the_recorded_report(tmp_path, monkeypatch):
    _same_report("default", tmp_path, monkeypatch)


def test_the_seed_preset_compiled_code_gives_the_recorded_report(tmp_path, monkeypatch):
    _same_report("seed_ir", tmp_path, monkeypatch)


def _same_report(name: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)   # relative origins as recorded
    assert main.main([*RUNS[name], "--out", str(tmp_path), "--quiet"], prog="main.py") == 0
    run = normalized(json.loads((tmp_path / "report.json").read_text()))
    golden = normalized(json.loads(gzip.decompress((GOLDEN / f"{name}.report.json.gz").read_bytes())))
    assert first_difference(golden, run) == ""


@pytest.mark.slow   # about 15 s on the 2-core machine: an op's numerics, backward and IR in two git trees
@pytest.mark.skipif(not BUNDLE.is_file(), reason=f"the Liger-Kernel corpus is absent ({BUNDLE})")
def test_a_review_of_the_corpus_gives_the_recorded_review(tmp_path, monkeypatch):
    liger = tmp_path / "liger"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(liger)], check=True, capture_output=True)
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    out = tmp_path / "review.json"
    argv = ["review", "gn999_base", "gn999_head", "--repo", str(liger), "--json", str(out), "--quiet"]
    assert main.main(argv, prog="main.py") == 0
    run = normalized_review(json.loads(out.read_text()))
    golden = normalized_review(json.loads(gzip.decompress((GOLDEN / "review_gn999.json.gz").read_bytes())))
    assert first_difference(golden, run) == ""
