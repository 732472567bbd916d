"""An op's calls outside review: `record OP --out DIR -- COMMAND` records them from any Python command (a
test file, a benchmark script) into DIR, and `compare --recorded DIR --variant ...` times and compiles two
revisions of the op on them, in the family made from the recording (variants/recorded.py)."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from compare.model.errors import UsageError
from compare.model.vocabulary import IR, TIMING

WORKER = Path(__file__).resolve().parents[1] / "runtime" / "replay_worker.py"
_OP = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
RECORDED_CHECKS = (TIMING, IR)
FAMILY_FOLDER = "family"   # under the recording: the family package made from it


def _options(parser) -> None:
    parser.add_argument("--out", metavar="DIR", help="the folder the calls are written into (new or empty; required)")
    parser.add_argument("--calls", type=int, help="distinct calls (by shapes, dtypes, flags) kept (default 6)")
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"),
                        help="where Triton runs while recording: cpu is its interpreter (default auto)")


class _Refused(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"record: {message} (see `main.py record --help`)")


def register(subparsers, compare) -> None:
    """The `record` subcommand, and `compare`'s --recorded option (on the parser `compare`)."""
    compare.add_argument("--recorded", metavar="DIR", help="compare the --variant ops on the calls `record` kept in "
                         "DIR (timing and ir; docs/review.md)")
    compare.set_defaults(with_recording=prepare)
    p = subparsers.add_parser("record", usage="%(prog)s OP --out DIR [--calls N] [--device D] -- COMMAND ...",
                              help="record an op's calls by value from a Python command (pytest, a script), for "
                                   "`compare --recorded`")
    p.add_argument("op", metavar="OP", help="the op, package.module:CALLABLE (e.g. mylib.ops:NormFunction.apply)")
    _options(p)
    p.add_argument("rest", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                   help="after --, the Python command whose calls of OP are recorded: pytest ARGS, python3 FILE.py "
                        "ARGS or python3 -m MODULE ARGS (run in this folder, as its interpreter would)")
    p.set_defaults(record=run_record)


def _read(args) -> argparse.Namespace:
    """The options given after OP (argparse leaves them in `rest`, with the command after `--`)."""
    if "--" not in args.rest:
        raise UsageError("record: give the command after --, e.g. main.py record mylib.ops:f --out DIR -- pytest tests")
    cut = args.rest.index("--")
    parser = _Refused(prog="main.py record", add_help=False)
    _options(parser)
    given = parser.parse_args(args.rest[:cut])
    merged = {k: v if v is not None else getattr(args, k) for k, v in vars(given).items()}
    if not merged["out"]:
        raise UsageError("record: --out DIR is required (the folder the calls are written into)")
    return argparse.Namespace(op=args.op, command=args.rest[cut + 1:], calls=merged["calls"] or 6,
                              device=merged["device"] or "auto", out=merged["out"])


def run_record(args) -> int:
    """Records OP's calls from the command; 0 when at least one was kept, 1 when none was (why, a line each)."""
    from compare.runtime.replay_worker import command_form
    args = _read(args)
    command = args.command
    if not _OP.match(args.op):
        raise UsageError(f"OP {args.op!r} is not package.module:CALLABLE (e.g. mylib.ops:NormFunction.apply)")
    try:
        command_form(command)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not 1 <= args.calls <= 100:
        raise UsageError(f"--calls {args.calls}: give 1 to 100")
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--out {out}: not an empty folder; give a new folder for the recording")
    out.mkdir(parents=True, exist_ok=True)
    module, name = args.op.split(":")
    request = {"roots": [os.getcwd()], "rootdir": os.getcwd(), "out": str(out.resolve()), "device": args.device,
               "ops": [{"module": module, "name": name}], "command": command, "calls": args.calls,
               "per_dtypes": args.calls, "bytes": 1 << 30}
    with tempfile.TemporaryDirectory(prefix="kernel-ab-record-") as tmp:
        ask = Path(tmp) / "request.json"
        ask.write_text(json.dumps(request))
        code = subprocess.run([sys.executable, str(WORKER), "record", str(ask)], stdin=subprocess.DEVNULL).returncode
    manifest = json.loads((out / "manifest.json").read_text()) if (out / "manifest.json").is_file() else {}
    calls = manifest.get("calls", [])
    for note in manifest.get("notes", []):
        print(f"kernel-ab: {note}", file=sys.stderr)
    for failed in manifest.get("unimportable", []):
        what = f"{args.op}'s module" if failed["ops"] else failed["test"] or "a module the command imports"
        where = f" ({failed['raised_in']} raised)" if failed["raised_in"] else ""
        print(f"kernel-ab: {what} could not be imported{where}: {failed['error']}", file=sys.stderr)
    for m in manifest.get("missing", []):
        print(f"kernel-ab: the command needs package {m['package']!r}, which this environment lacks", file=sys.stderr)
    said = f"the command ended with exit code {code}" if code else "the command ended"
    print(f"kernel-ab: recorded {len(calls)} call{'s' if len(calls) != 1 else ''} of {args.op} into {out} ({said}); "
          f"compare two revisions on them: main.py compare --recorded {out} --variant base=git:REV:PATH::{name} "
          f"--variant head=git:REV:PATH::{name}", file=sys.stderr)
    return 0 if calls else 1


def free_memory(backend) -> int | None:
    """The GPU memory free now, which the timed (grown) call of a family made from recorded calls must fit."""
    if not backend.gpu:
        return None
    from compare.comparison.memory import device_available
    return device_available()


def prepare(args, backend):
    """`compare --recorded DIR`'s arguments as compare reads them: the family made from DIR (written into
    DIR/family, added to --family-path), the op's argument list added to each --variant spec that gives none,
    timing and ir only, the recorded dtype and, on a GPU, the timed (grown) call. UsageError for bad input."""
    from variants.recorded_build import NotTimeable, write_family
    folder = Path(args.recorded)
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        raise UsageError(f"--recorded {folder}: no recording there (a folder `main.py record` wrote, holding "
                         "manifest.json)") from None
    ops = list(dict.fromkeys(c["op"] for c in manifest.get("calls", [])))
    if len(ops) != 1:
        raise UsageError(f"--recorded {folder}: it holds calls of {len(ops)} ops ({', '.join(ops) or 'none'}); "
                         "record one op into a folder of its own")
    asked = [c for c in (args.checks or RECORDED_CHECKS) if c not in RECORDED_CHECKS]
    if asked:
        raise UsageError(f"--check {asked[0]}: a recorded op has no reference to check numerics against; "
                         "--recorded runs timing and ir (review replays numerics)")
    if not args.external or len(args.external) < 2 or args.variants:
        raise UsageError("--recorded compares ops given as --variant NAME=[git:REV:]PATH::OP (two or more)")
    try:
        built = write_family(folder, ops[0], folder / FAMILY_FOLDER, ops[0].split(":")[1].removesuffix(".apply"),
                             free_memory(backend))
    except NotTimeable as exc:
        raise UsageError(f"--recorded {folder}: no call can be timed: {exc}") from None
    if not args.quiet:
        left = "".join(f"{why}; " for why in built.left_out)
        print(f"kernel-ab: family {built.name} from {folder}: {left}the timed call on a GPU is {built.timed}",
              file=sys.stderr)
    external = [e if "(" in e.rpartition("::")[2] else e + built.call.text() for e in args.external]
    preset = args.preset or (None if args.shape else "timed" if backend.gpu else "smallest")
    dtype = args.dtype or built.dtypes.get(preset or "", built.dtype)
    return argparse.Namespace(**{**vars(args), "external": external, "family": built.name, "checks": list(
        args.checks or RECORDED_CHECKS), "dtype": dtype, "inputs": "recorded",
        "input_kind": "recorded", "preset": preset, "family_paths": [*(args.family_paths or ()),
                                                                      str(folder / FAMILY_FOLDER)]})
