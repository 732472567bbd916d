"""Loops of two variants matched by what they are (compare.model.loopmatch) and what is said about them
(compare.model.loopclaims, the loop tables), on hand-made loop records shaped like the group-norm kernel's."""
import dataclasses
import re

import pytest

from compare.model.loopclaims import loop_claims
from compare.model.loopmatch import match, stage_matches
from compare.checks.ir.summarize import summarize
from compare.render.ir_tables import loop_rows
from compare.model.results import (IRCarried, IRLoop, IRLoopMatch, IRMemOp, IRPair, IRSection, IRStage, IRVariant,
                             _decode, _encode)

F32, PTR = IRCarried("f32", False), IRCarried("!tt.ptr<f32>", True)
ALL = "0 to a12 step 1024"
CHANNELS = "muli(program_id y, a13) to addi(muli(program_id y, a13), a13) step 1"
PER_CHANNEL = "0 to divsi(a12, a13) step 1024"
TENSOR_LOAD, SCALAR_LOADS = [("load", "tensor", 1)], [("load", "scalar", 2)]
# (variable, trip, global loads and stores, op mix, carried)
STATS = ("start", ALL, TENSOR_LOAD, {"tt.load": 1, "tt.reduce": 2, "arith.addf": 4, "arith.mulf": 1, "scf.yield": 1},
         (F32, F32))
SUM = ("start", ALL, TENSOR_LOAD, {"tt.load": 1, "tt.reduce": 1, "arith.addf": 2, "scf.yield": 1}, (F32,))
SQUARED_DEVIATIONS = ("start", ALL, TENSOR_LOAD, {"tt.load": 1, "tt.reduce": 1, "arith.addf": 2, "arith.subf": 1,
                                                  "arith.mulf": 1, "arith.select": 1, "scf.yield": 1}, (F32,))
CHANNEL_PTRS = ("channel", CHANNELS, SCALAR_LOADS, {"tt.addptr": 4, "tt.load": 2, "scf.yield": 1}, (PTR, PTR))
CHANNEL_OFFSET = ("channel", CHANNELS, SCALAR_LOADS, {"tt.addptr": 2, "tt.load": 2, "arith.muli": 1, "arith.subi": 1},
                  ())
INNER = ("start", PER_CHANNEL, [("load", "tensor", 1), ("store", "tensor", 1)],
         {"tt.splat": 8, "tt.addptr": 2, "tt.load": 1, "tt.store": 1, "arith.mulf": 2, "arith.addf": 1}, ())
INNER_OFFSET = INNER[:3] + ({**INNER[3], "tt.addptr": 4},) + INNER[4:]


def stage(*loops, name="ttir") -> IRStage:
    """A stage from (path, loop description) pairs, in listing order."""
    built, memory = [], []
    for line, (path, (variable, trip, mem, ops, carried)) in enumerate(loops, 1):
        counts = tuple(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])))
        built.append(IRLoop(path, path.count("."), line * 10, "scf.for", carried, counts, sum(ops.values()),
                            variable if name in ("ttir", "ttgir") else "", trip if name in ("ttir", "ttgir") else ""))
        memory += [IRMemOp(kind, f"tt.{kind}", width, path, n) for kind, width, n in mem]
    return IRStage(name, 100, 100, tuple(built), tuple(memory))


def section(a: list[IRStage], b: list[IRStage], names=("A", "B"), record=True) -> IRSection:
    va, vb = IRVariant(names[0], "ok", stages=tuple(a)), IRVariant(names[1], "ok", stages=tuple(b))
    loops = tuple(m for sa, sb in zip(a, b) for m in match(sa, sb)) if record else ()
    pair = IRPair(names[0], names[1], (), loops)
    return IRSection("offline", "sm_90", "N2", "float32", "", "", tuple(s.stage for s in a), (va, vb), (pair,))


def statuses(found) -> list[tuple]:
    return [(m.a, m.b, m.status) for m in found]


SEED_A = [("1", STATS), ("2", CHANNEL_PTRS), ("2.1", INNER)]
SEED_B = [("1", STATS), ("2", CHANNEL_OFFSET), ("2.1", INNER_OFFSET)]
TWO_PASS = [("1", SUM), ("2", SQUARED_DEVIATIONS), ("3", CHANNEL_PTRS), ("3.1", INNER)]


def test_a_new_statistics_loop_leaves_the_channel_loop_matched_to_itself():
    found = match(stage(*SEED_A), stage(*TWO_PASS))
    assert statuses(found) == [(("1",), ("1", "2"), "unsure"), (("2",), ("3",), "matched"),
                               (("2.1",), ("3.1",), "matched")]


def test_two_pass_headline_claims_no_pointer_change_and_lists_the_unmatched_loops():
    s = section([stage(*SEED_A), stage(*SEED_A, name="ptx")], [stage(*TWO_PASS), stage(*TWO_PASS, name="ptx")])
    claims = loop_claims(s, *s.variants)
    assert not any("carries pointers" in c for c in claims), claims
    assert claims[0] == ("no confident match, no pair claimed: A's loop 1 (for start; no pointer carried) against "
                         "B's loops 1 (for start; no pointer carried), 2 (for start; no pointer carried) (TTIR, PTX)")
    assert any(c.startswith("same instruction counts at every stage: innermost loop 2.1 of A, 3.1 of B (for start)")
               for c in claims)


def test_seed_pair_names_the_pointers_removed_and_the_address_arithmetic_added_to_the_inner_loop():
    s = section([stage(*SEED_A)], [stage(*SEED_B)])
    claims = loop_claims(s, *s.variants)
    assert "loop 2 (for channel) carries pointers across iterations: 2 in A, 0 in B (TTIR)" in claims
    assert "innermost loop 2.1 (for start), instruction count changes: TTIR tt.addptr +2" in claims
    assert "same instruction counts at every stage: innermost loop 1 (for start)" in claims


def test_trip_count_tells_apart_loops_with_the_same_body_in_swapped_places():
    other = ("start", "0 to a3 step 64") + STATS[2:]
    found = match(stage(("1", STATS), ("2", other)), stage(("1", other), ("2", STATS)))
    assert statuses(found) == [(("1",), ("2",), "matched"), (("2",), ("1",), "matched")]


def test_clearly_closest_rival_is_matched_and_the_other_added():
    store_loop = ("i", ALL, [("store", "tensor", 1)], {"tt.store": 1, "tt.splat": 3}, ())
    found = match(stage(("1", SUM)), stage(("1", store_loop), ("2", SUM), ("3", SQUARED_DEVIATIONS)))
    assert statuses(found) == [(("1",), ("2",), "matched"), ((), ("1",), "added"), ((), ("3",), "added")]


def test_a_loop_like_none_of_the_others_is_removed_not_matched():
    found = match(stage(*SEED_A), stage(("1", STATS)))
    assert statuses(found) == [(("1",), ("1",), "matched"), (("2",), (), "removed"), (("2.1",), (), "removed")]
    s = section([stage(*SEED_A)], [stage(("1", STATS))])
    assert "loop 2 (for channel; carries 2 pointers) only in A (TTIR)" in loop_claims(s, *s.variants)


def test_copies_of_one_loop_pair_in_listing_order():
    found = match(stage(("1", SUM), ("2", SUM)), stage(("1", SUM), ("2", SUM)))
    assert statuses(found) == [(("1",), ("1",), "matched"), (("2",), ("2",), "matched")]
    carrying = ("start",) + SUM[1:4] + ((PTR,),)   # alike but for what they carry: the order must not pick
    found = match(stage(("1", SUM), ("2", carrying)), stage(("1", carrying), ("2", SUM)))
    assert statuses(found) == [(("1", "2"), ("1", "2"), "unsure")]


def test_loop_table_puts_each_loop_under_the_baseline_loop_it_matched():
    s = section([stage(*SEED_A)], [stage(*TWO_PASS)])
    rows = [(r[0], r[1], r[2], r[7]) for r in loop_rows(s, "ttir")]
    assert rows == [("1 (start)", "A", "-", "-"),
                    ("2 (channel)", "A", "-", "-"), ("3 (channel)", "B", "2 (1.00)", "+0"),
                    ("2.1 (start)", "A", "-", "-"), ("3.1 (start)", "B", "2.1 (1.00)", "+0"),
                    ("1 (start)", "B", "unsure: 1", "-"), ("2 (start)", "B", "unsure: 1", "-")]


def test_report_without_recorded_matches_gets_them_computed_and_recorded_ones_are_kept():
    old = section([stage(*SEED_A)], [stage(*TWO_PASS)], record=False)
    assert stage_matches(old, "A", "B", "ttir") == match(stage(*SEED_A), stage(*TWO_PASS))
    kept = IRLoopMatch("ttir", ("2",), ("3",), "matched", 0.5)
    recorded = dataclasses.replace(old, pairs=(dataclasses.replace(old.pairs[0], loops=(kept,)),))
    assert stage_matches(recorded, "A", "B", "ttir") == (kept,)


@pytest.mark.parametrize("recorded, said", [
    (IRLoopMatch("ttir", ("9",), ("3",), "matched"), "names loop 9 of A, which has no such loop"),
    (IRLoopMatch("ttir", ("2",), ("3",), "added"), "loop match 'added' in ttir with 1 loops of A and 1 of B"),
    (IRLoopMatch("ttir", (), ("3",), "unsure"), "loop match 'unsure' in ttir with 0 loops of A and 1 of B"),
    (IRLoopMatch("ttir", ("2",), ("3",), "paired"), "loop match status 'paired' in ttir; known: matched"),
])
def test_recorded_match_naming_loops_the_stages_lack_is_refused(recorded, said):
    s = section([stage(*SEED_A)], [stage(*TWO_PASS)])
    s = dataclasses.replace(s, pairs=(dataclasses.replace(s.pairs[0], loops=(recorded,)),))
    with pytest.raises(ValueError, match=re.escape(said)):
        stage_matches(s, "A", "B", "ttir")


def test_matches_and_trips_survive_json_and_older_json_loads_without_them():
    s = section([stage(*SEED_A)], [stage(*TWO_PASS)])
    assert _decode(IRSection, _encode(s)) == s and s.pairs[0].loops
    old = _encode(s)
    del old["pairs"][0]["loops"]
    for v in old["variants"]:
        for loop in v["stages"][0]["loops"]:
            del loop["trip"]
    loaded = _decode(IRSection, old)
    assert loaded.pairs[0].loops == () and all(l.trip == "" for l in loaded.variants[0].stages[0].loops)


TTIR = """module {
  tt.func public @kernel(%v0: !tt.ptr<f32>, %v1: i32, %v2: i32) attributes {noinline = false} {
    %v3 = arith.constant 0 : i32
    %v4 = arith.constant 4 : i32
    scf.for %v5 = %v3 to %v1 step %v4  : i32 {
      %v6 = arith.divsi %v1, %v2 : i32
      tt.return
    }
    %v6 = arith.divsi %v1, %v2 : i32
    %v7 = tt.get_program_id x : i32
    %v8 = arith.muli %v7, %v6 : i32
    %v9:1 = scf.for %v5 = %v8 to %v6 step %v4 iter_args(%v10 = %v0) -> (!tt.ptr<f32>)  : i32 {
      scf.for %v11 = %v10 to %v5 step %v4  : i32 {
      }
      scf.yield %v10 : !tt.ptr<f32>
    }
    tt.return
  }
}"""


def test_trip_is_read_back_to_arguments_constants_and_program_ids():
    s = summarize("ttir", TTIR.splitlines())
    assert [(l.path, l.trip) for l in s.loops] == [
        ("1", "0 to a1 step 4"),
        ("2", "muli(program_id x, divsi(a1, a2)) to divsi(a1, a2) step 4"),   # %v6 reused in a sibling region
        ("2.1", "carried to iv step 4")]


def test_plain_words_count_instructions_by_kind_so_a_swap_within_a_kind_is_no_change():
    from compare.model.plain_words import delta, kind
    assert kind("IADD3") == kind("VIADD") == kind("add.s32") == kind("arith.addi") == ("integer add", "integer adds")
    assert kind("SHFL.BFLY") != kind("SHF.L.U32") and kind("add.f32") != kind("add.s32")
    assert kind("asm ld.global.b32") == kind("LDG.E") and kind("tt.reduce")[1] == "instructions of other kinds"
    assert delta({"tt.addptr": 4}, {"tt.addptr": 2}) == "2 more pointer additions"
    assert delta({"IADD3": 3}, {"VIADD": 3}) == "as many instructions of each kind, some swapped for others of the kind"
    assert delta({"IADD3": 3, "UMOV": 1}, {"VIADD": 3}) == "1 more register move (others swapped within their kind)"
    assert delta({"UMOV": 4, "IMAD": 1}, {"ISETP.GE.AND": 2}) == \
        "3 more instructions (4 more register moves, 2 fewer comparisons, 1 more integer multiply)"
    assert delta({"MOV": 1}, {"MOV": 1}) == ""
