"""The invocations of benchmarks/hostile_sweep.py in four categories, each with what it must do. values: a
malformed value -> exit 2, one `kernel-ab: error:` line, fast; outputs: a path not the tool's to overwrite
-> exit 2, its bytes unchanged (with --force: written atomically); hostile: a variant that exits, raises,
hangs, leaks or writes its inputs -> a report of it and a passing correct one; signals: SIGINT/TERM/HUP ->
130/143/129, one line, nothing left. `{s}` in argv is the case's scratch folder; nothing imports torch."""
from __future__ import annotations

import dataclasses
import json
import signal as signals

from benchmarks import hostile_variants as hv

FAMILIES = ("group_norm", "layer_norm", "rms_norm")
TINY = {"group_norm": "1,2,1,4", "layer_norm": "2,8", "rms_norm": "2,8"}
GOOD = {"group_norm": "pointer_mutation", "layer_norm": "bwd_pointer_mutation", "rms_norm": "pointer_mutation"}
SHAPE_FIELDS = {
    "group_norm": ("2,4,2,4x4", ("BATCH", "CHANNELS", "GROUPS", "SPATIAL")),
    "layer_norm": ("4,8", ("ROWS", "COLS")),
    "rms_norm": ("4,8,1.0,gemma", ("ROWS", "COLS", "OFFSET", "MODE")),
}
# within 2**31-1 elements (the tool's 32-bit limit) but tens of GiB with outputs and the float64 reference
TOO_BIG_FOR_MEMORY = {"group_norm": "8,65536,32,4095", "layer_norm": "65535,32767", "rms_norm": "65535,32767,0.0,llama"}
PRECIOUS = "precious bytes that are not a kernel-ab report\n"
VARIANT_TIMEOUT = "15"     # --variant-timeout for hostile runs, where the tool has the flag
EXPECTS = ("usage_error", "refused", "written", "report", "signal")


@dataclasses.dataclass
class Case:
    id: str
    category: str
    argv: list[str]                  # after main.py; `{s}` is the case's scratch folder
    expect: str                      # one of EXPECTS
    files: dict = dataclasses.field(default_factory=dict)   # relative path -> what to make (see make_files)
    protect: list[str] = dataclasses.field(default_factory=list)  # bytes (or listing) must not change
    written: list[str] = dataclasses.field(default_factory=list)  # must end as a complete kernel-ab output
    absent: list[str] = dataclasses.field(default_factory=list)   # must not exist afterwards
    good: str = ""                   # report: the correct variant, which must pass every case
    hostile: str = ""                # report: the hostile variant, which must be named
    must_flag: bool = False          # report: the hostile variant must fail (not pass) in the report
    expect_rc: int = 0               # report / written
    signal: list = dataclasses.field(default_factory=list)  # [signal name, "process"|"group", delay s]
    timeout: float = 60.0
    memory_gib: float = 0.0          # RLIMIT_AS for the run (a safety net for the too-big shapes)

    def key(self) -> str:
        """What makes the invocation distinct: its command line, its files and its signal."""
        return json.dumps([self.argv, self.files, self.signal], sort_keys=True)


def quick(family: str = "group_norm") -> list[str]:
    """The smallest real comparison: what a malformed value is slotted into."""
    return ["compare", "--family", family, "--shape", TINY[family], "--check", "numerics", "--trials", "1",
            "--inputs", "normal", "--quiet"]


def with_opt(argv: list[str], flag: str, value: str | None, drop: tuple[str, ...] = ()) -> list[str]:
    """`argv` with `flag` (and every flag in `drop`) removed, then `flag value` appended."""
    out, skip = [], False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg in (flag, *drop) and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            skip = True
            continue
        out.append(arg)
    return out + ([flag] if value is None else [flag, value])


NUMERIC_BAD = {
    "--trials": ("abc", "", "nan", "inf", "-1", "0", "1.5", "1000000000000", "99999999999999999999999"),
    "--seed": ("abc", "", "nan", "inf", "-1", "1.5", "4294967296", "99999999999999999999"),
    "--rounds": ("abc", "", "nan", "-1", "0", "1", "1.5", "1000000000000", "99999999999999999999999"),
    "--calls": ("abc", "", "nan", "-1", "0", "1.5", "1000000000000", "99999999999999999999999"),
    "--noise": ("abc", "", "nan", "inf", "-inf", "-0.1", "1e400"),
    "--max-seconds": ("abc", "", "nan", "inf", "-1", "0"),
    "--fail-if-slower": ("abc", "", "nan", "inf", "-1"),
    "--eps": ("abc", "", "nan", "inf", "-1e-5", "0"),
}
EMPTY_FLAGS = ("--family", "--preset", "--dtype", "--inputs", "--check", "--modes", "--graph", "--stage",
               "--target", "--device", "--repo", "--variant", "--shape")
UNKNOWN = (("--dtype", "float64"), ("--dtype", "int8"), ("--dtype", "float32,nosuch"), ("--inputs", "nosuch"),
           ("--inputs", "normal,weird"), ("--check", "bogus"), ("--device", "gpu"), ("--modes", "sideways"),
           ("--graph", "sometimes"), ("--stage", "bogus"), ("--target", "sm_999"), ("--target", "gfx90a"),
           ("--target", "sm_"), ("--family", "nosuch"))
FIELD_BAD = ("x", "nan", "inf", "-1", "0", "1.5", "", "99999999999999999999")
SHAPE_BAD = {
    "group_norm": ("2,4,2", "2,4,2,4,4", "2,4,3,4", "2,4,8,4", "2,4,2,4x", "2,4,2,x4", "2,4,2,4x0",
                   "2,4,2,4x-1", "2,4,2,4xnan", ",,,", "2;4;2;4", "100000,100000,1,1000x1000"),
    "layer_norm": ("4", "4,8,1", "1e3,8", ",", "4;8", "100000,100000"),
    "rms_norm": ("4,abc,1.0,gemma", "4,8,nan,gemma", "4,8,inf,gemma", "4,8,-inf,gemma", "4,8,,gemma",
                 "4,8,1e400,gemma", "4,8,1.0,", "4,8,1.0,nosuch", "4,8,1.0,1", "4,8,1.0,gemma,x",
                 "4", "100000,100000,0.0,llama"),
}
# --variant texts that are malformed or name what is not there (ok.py is a correct op)
BAD_SPECS = ("x", "=f.py::op", "n=", "n=::op", "n={s}/ok.py", "n={s}/ok.py::", "n={s}/missing.py::op",
             "n={s}/ok.py::nosuch", "n={s}/ok.py::op(Q, R)", "n={s}/ok.py::op(X, W", "bad name!={s}/ok.py::op",
             "{good}={s}/ok.py::op", "n=git:no-such-rev:ok.py::op")


def value_cases() -> list[Case]:
    cases = []

    def add(name, argv, files=None, memory=0.0):
        cases.append(Case(f"values/{name}", "values", argv, "usage_error", files=files or {}, memory_gib=memory))

    for flag, values in NUMERIC_BAD.items():
        for i, value in enumerate(values):
            family = FAMILIES[i % 3]
            add(f"{family}/{flag}={value!r}", with_opt(quick(family), flag, value))
    for i, flag in enumerate(EMPTY_FLAGS):
        family = FAMILIES[i % 3]
        add(f"{family}/{flag}=''", with_opt(quick(family), flag, "", drop=("--shape",) * (flag == "--preset")))
    for i, (flag, value) in enumerate(UNKNOWN):
        family = FAMILIES[i % 3]
        add(f"{family}/{flag}={value}", with_opt(quick(family), flag, value))
    for family in FAMILIES:
        add(f"{family}/--preset=nosuch", with_opt(quick(family), "--preset", "nosuch", drop=("--shape",)))
        add(f"{family}/unknown variant", quick(family) + ["nosuch_variant"])
        other = GOOD[FAMILIES[(FAMILIES.index(family) + 1) % 3]]
        if other != GOOD[family]:
            add(f"{family}/variant of another family {other}", quick(family) + [other])
        base, fields = SHAPE_FIELDS[family]
        parts = base.split(",")
        for f, field in enumerate(fields):
            for value in FIELD_BAD if field not in ("OFFSET", "MODE") else ():
                shape = ",".join(parts[:f] + [value] + parts[f + 1:])
                add(f"{family}/--shape {field}={value!r}", with_opt(quick(family), "--shape", shape))
        for shape in SHAPE_BAD[family]:
            add(f"{family}/--shape={shape!r}", with_opt(quick(family), "--shape", shape))
        add(f"{family}/shape too big for memory", with_opt(quick(family) + ["--check", "backward"], "--shape",
                                                           TOO_BIG_FOR_MEMORY[family]), memory=8.0)
    for i, spec in enumerate(BAD_SPECS):
        family = FAMILIES[i % 3]
        add(f"{family}/--variant {spec}", quick(family) + ["--variant", spec.replace("{good}", GOOD[family])],
            files={"ok.py": ["op", family, "none", "forward", "pass"]})
    add("frobnicate", ["frobnicate"])
    add("ir --stage bogus", ["ir", "--stage", "bogus"])
    add("ir --target sm_999", ["ir", "--target", "sm_999"])
    add("report missing", ["report", "{s}/missing.json"])
    add("report precious", ["report", "{s}/precious.json"], files={"precious.json": ["text", PRECIOUS]})
    add("two --variant one name", quick() + ["--variant", "a={s}/ok.py::op", "--variant", "a={s}/ok.py::op"],
        files={"ok.py": ["op", "group_norm", "none", "forward", "pass"]})
    return cases


def output_cases() -> list[Case]:
    precious = {"precious.json": ["text", PRECIOUS], "precious.md": ["text", PRECIOUS],
                "out/report.json": ["text", PRECIOUS], "out/report.md": ["text", PRECIOUS],
                "mdonly/report.md": ["text", PRECIOUS], "folder/keep.txt": ["text", PRECIOUS],
                "link.json": ["symlink", "precious.json"],
                "mixed/report.json": ["fixture", "report.json"], "mixed/report.md": ["text", PRECIOUS],
                "ours.json": ["fixture", "report.json"], "ours.md": ["fixture", "report.md"],
                "oursdir/report.json": ["fixture", "report.json"], "oursdir/report.md": ["fixture", "report.md"]}
    every = sorted(p for p, spec in precious.items() if spec[0] != "symlink")
    untouchable = [p for p in every if precious[p][0] == "text"]
    refused = [  # (name, extra argv, must not exist afterwards)
        ("--json a foreign file", ["--json", "{s}/precious.json"], []),
        ("--markdown a foreign file", ["--markdown", "{s}/precious.md"], []),
        ("--markdown a foreign .json", ["--markdown", "{s}/precious.json"], []),
        ("--out with a foreign report.json", ["--out", "{s}/out"], []),
        ("--out with a foreign report.md", ["--out", "{s}/mdonly"], ["mdonly/report.json"]),
        ("--out with ours and a foreign report.md", ["--out", "{s}/mixed"], []),
        ("--json a link to a foreign file", ["--json", "{s}/link.json"], []),
        ("--out a foreign file", ["--out", "{s}/precious.json"], []),
        ("--json and --markdown the same path", ["--json", "{s}/same", "--markdown", "{s}/same"], ["same"]),
        ("--json inside --out", ["--json", "{s}/o/report.json", "--out", "{s}/o"], ["o"]),
        ("--markdown inside --out", ["--markdown", "{s}/o/report.md", "--out", "{s}/o"], ["o"]),
        ("--json ''", ["--json", ""], []),
        ("--markdown ''", ["--markdown", ""], []),
        ("--out ''", ["--out", ""], []),
        ("--json /dev/full", ["--json", "/dev/full"], []),
        ("--markdown /dev/full", ["--markdown", "/dev/full"], []),
        ("--out /dev/full", ["--out", "/dev/full"], []),
        ("--json a folder", ["--json", "{s}/folder"], []),
        ("--markdown a folder", ["--markdown", "{s}/folder"], []),
    ]
    forced = [  # (name, extra argv, files that must end as kernel-ab output)
        ("--force --json a foreign file", ["--force", "--json", "{s}/precious.json"], ["precious.json"]),
        ("--force --markdown a foreign file", ["--force", "--markdown", "{s}/precious.md"], ["precious.md"]),
        ("--force --out with foreign reports", ["--force", "--out", "{s}/out"], ["out/report.json", "out/report.md"]),
        ("--json a kernel-ab report", ["--json", "{s}/ours.json"], ["ours.json"]),
        ("--markdown a kernel-ab report", ["--markdown", "{s}/ours.md"], ["ours.md"]),
        ("--out with kernel-ab reports", ["--out", "{s}/oursdir"], ["oursdir/report.json", "oursdir/report.md"]),
    ]
    # --force never makes these writable: each tried once, the family rotating
    still_refused = [(FAMILIES[i % 3], "--force " + n, ["--force"] + e, a) for i, (n, e, a) in enumerate(refused[7:])]
    cases = []
    for family in FAMILIES:
        for _, name, extra, absent in [(family, *r) for r in refused] + [r for r in still_refused if r[0] == family]:
            cases.append(Case(f"outputs/{family}/{name}", "outputs", quick(family) + extra, "refused",
                              files=precious, protect=every, absent=absent))
        for name, extra, written in forced:
            cases.append(Case(f"outputs/{family}/{name}", "outputs", quick(family) + extra, "written",
                              files=precious, protect=[p for p in untouchable if p not in written],
                              written=written, timeout=120.0))
    return cases


def _hostile_case(family, name, files, good, hostile, must_flag, index, features, *, first=None, spec="op") -> Case:
    """A hostile variant file next to the family's correct variant; the order alternates with `index`."""
    first = index % 2 == 0 if first is None else first
    gate = not first and index % 4 == 1
    path = "{s}/" + next(iter(files))
    names = [hostile, good] if first else [good, hostile]
    argv = ["compare", *names, "--family", family, "--variant", f"{hostile}={path}::{spec}",
            "--shape", TINY[family], "--check", "numerics", "--check", "backward", "--trials", "1",
            "--inputs", "normal", "--quiet", "--json", "{s}/report.json"]
    if gate:
        argv.append("--fail-on-numerics")
    if "--variant-timeout" in features:
        argv += ["--variant-timeout", VARIANT_TIMEOUT]
    order = "first" if first else "second"
    return Case(f"hostile/{family}/{name}/{order}" + ("/gate" if gate else ""), "hostile", argv, "report",
                files=files, good=good, hostile=hostile, must_flag=must_flag,
                expect_rc=1 if gate and must_flag else 0, timeout=120.0)


def hostile_cases(features: frozenset = frozenset()) -> list[Case]:
    cases = []

    def add(family, name, file_spec, must_flag, **kw):
        file = f"h_{family}_{name.replace('@', '_at_')}.py"
        cases.append(_hostile_case(family, name, {file: file_spec}, GOOD[family], "hostile", must_flag,
                                   len(cases), features, **kw))

    for a, act in enumerate(hv.ACTS):
        for place in hv.PLACES:
            # an act at import happens before any family code runs: one family each is enough
            families = [FAMILIES[a % 3]] if place == "import" else FAMILIES
            for family in families:
                add(family, f"{act}@{place}", ["op", family, act, place, ""], act not in hv.HARMLESS_ACTS)
    for family in FAMILIES:
        for name, (place, when, statement) in hv.MUTATIONS.items():
            for first in (True, False):
                add(family, name, ["op", family, name, place, statement, when], True, first=first)
        for name, returns in hv.WRONG_RETURNS.items():
            add(family, name, ["op", family, name, "forward", "pass", "before", returns], True)
        for act in hv.KERNEL_ACTS:
            add(family, f"kernel_{act}", ["kernel", family, act], True, spec="forward_kernel")
    return cases


SIGNALS = {"SIGINT": 130, "SIGTERM": 143, "SIGHUP": 129}
SIGNAL_GRACE = 60.0   # seconds from the signal to the end of the run; past it, the signal was ignored: a hang


def signal_cases() -> list[Case]:
    cases = []
    for family in FAMILIES:
        for sig in SIGNALS:
            for target in ("process", "group"):
                for delay in (0.3, 1.0, 3.0):
                    argv = ["compare", "--family", family, "--quiet"]
                    if delay == 1.0:
                        argv += ["--json", "{s}/report.json"]
                    cases.append(Case(f"signals/{family}/{sig}/{target}/{delay}s", "signals", argv, "signal",
                                      signal=[sig, target, delay], timeout=SIGNAL_GRACE))
            # the signal while a variant sleeps in its forward call
            file = f"h_{family}_sleep.py"
            argv = ["compare", GOOD[family], "hostile", "--family", family, "--variant", f"hostile={{s}}/{file}::op",
                    "--shape", TINY[family], "--check", "numerics", "--trials", "1", "--inputs", "normal", "--quiet"]
            cases.append(Case(f"signals/{family}/{sig}/group/during a hostile sleep", "signals", argv, "signal",
                              files={file: ["op", family, "sleep_3600", "forward", ""]},
                              signal=[sig, "group", 8.0], timeout=SIGNAL_GRACE))
    return cases


CATEGORIES = ("values", "outputs", "hostile", "signals")


def all_cases(features: frozenset = frozenset()) -> list[Case]:
    """Every invocation of the sweep; `features`: the compare flags the tool has (from its --help)."""
    return value_cases() + output_cases() + hostile_cases(features) + signal_cases()


def signal_number(name: str) -> int:
    return int(getattr(signals, name))
