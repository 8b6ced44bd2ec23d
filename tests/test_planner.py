"""The planner: Broder's example figures, P(ρ0) near 1/2, budgets, costs, and an exhaustive optimum."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from neardup.errors import ParamError
from neardup.features import FeatureParams, acceptance, rejection
from neardup.params import DedupParams
from neardup.planner import (
    KNOWN_LIMITS,
    KNOWN_PLANS,
    Plan,
    _exhaustive_search,
    evaluate,
    features_for,
    plan,
    plan_for,
    planned,
    sketch_for,
)
from neardup.plots import PICTURE_TYPES, plot_curve


def test_broder_example_plan_reports_the_papers_figures() -> None:
    p = evaluate(FeatureParams(6, 14, 2), 0.9)
    assert (p.k, p.s, p.r, p.t, p.bytes_per_doc) == (6, 14, 2, 84, 48)
    curve = dict(p.curve)
    assert curve[0.5] < 0.6e-7
    assert 1 - curve[0.99] < 0.00022
    assert float(rejection(0.99, 6, 14, 2)) < 0.00022
    assert float(acceptance(0.77, p.params.k, p.params.s, p.params.r)) < 0.01
    assert p.rho_half == pytest.approx(0.909, abs=0.002)


@pytest.mark.parametrize("threshold", [0.8, 0.9])
def test_plan_puts_half_acceptance_near_the_threshold(threshold: float) -> None:
    p = plan(threshold)
    assert 0.35 <= p.p_at_threshold <= 0.65
    assert p.rho_half == pytest.approx(threshold, abs=0.02)
    assert p.t == p.k * p.s <= 256 and p.bytes_per_doc == 8 * p.k
    probs = [v for _, v in p.curve]
    assert probs == sorted(probs)  # monotone
    assert [rho for rho, _ in p.curve] == sorted({0.5, 0.7, 0.8, 0.9, 0.95, 0.99, threshold})


@pytest.mark.parametrize("max_bytes", [8, 24, 48, 100, 200])
def test_plan_respects_byte_budget_and_max_t(max_bytes: int) -> None:
    p = plan(0.8, max_bytes=max_bytes, max_t=128)
    assert p.bytes_per_doc <= max_bytes and p.t <= 128 and p.t == p.k * p.s


def test_bigger_budget_never_gives_a_worse_plan() -> None:
    errors = [plan(0.85, max_bytes=b).error for b in (8, 16, 48, 128, 512)]
    assert all(x >= y - 1e-12 for x, y in itertools.pairwise(errors))
    assert errors[-1] < errors[0]


@pytest.mark.parametrize("cost_fn", sorted(KNOWN_PLANS))
def test_known_plans_are_what_the_search_finds(cost_fn: float) -> None:
    for threshold, known in KNOWN_PLANS[cost_fn].items():
        assert _exhaustive_search(threshold, 1.0, cost_fn, KNOWN_LIMITS) == known


def test_default_runs_take_their_features_from_the_known_plans_without_searching() -> None:
    planned.cache_clear()
    _exhaustive_search.cache_clear()
    assert features_for(DedupParams()) == FeatureParams(*KNOWN_PLANS[1000.0][0.8])
    assert features_for(DedupParams(verify="none")) == FeatureParams(*KNOWN_PLANS[1.0][0.8])
    p = plan(0.9)
    assert (p.k, p.s, p.r) == KNOWN_PLANS[1.0][0.9]
    assert _exhaustive_search.cache_info().misses == 0
    plan(0.81)  # not a known threshold: searched
    assert _exhaustive_search.cache_info().misses == 1


def test_plan_is_the_exhaustive_optimum_of_evaluate() -> None:
    # Small grid so brute force through the accurate evaluate() is quick.
    threshold, max_t = 0.75, 16
    best = plan(threshold, max_t=max_t, max_r=3)
    others = [
        evaluate(FeatureParams(k, s, r), threshold)
        for k in range(1, max_t + 1)
        for s in range(1, max_t // k + 1)
        for r in range(1, min(3, k) + 1)
    ]
    assert best.error == pytest.approx(min(o.error for o in others), rel=1e-9)


def test_costs_move_the_curve_the_right_way() -> None:
    even = plan(0.8, max_bytes=64)
    fewer_misses = plan(0.8, max_bytes=64, cost_fn=10)
    fewer_false = plan(0.8, max_bytes=64, cost_fp=10)
    assert fewer_misses.rho_half < even.rho_half < fewer_false.rho_half
    assert fewer_misses.fn_rate < even.fn_rate < fewer_false.fn_rate
    assert fewer_false.fp_rate < even.fp_rate < fewer_misses.fp_rate


def test_error_integrals_are_consistent() -> None:
    p = evaluate(FeatureParams(6, 14, 2), 0.8, cost_fp=2.0, cost_fn=3.0)
    assert p.fp_rate == pytest.approx(p.fp_integral / 0.8)
    assert p.fn_rate == pytest.approx(p.fn_integral / 0.2)
    assert p.error == pytest.approx((2 * p.fp_integral + 3 * p.fn_integral) / (2 * 0.8 + 3 * 0.2))
    # Cross-check the quadrature with a fine trapezoid rule.
    x = np.linspace(0, 0.8, 200001)
    assert p.fp_integral == pytest.approx(
        np.trapezoid(acceptance(x, p.params.k, p.params.s, p.params.r), x), rel=1e-6
    )
    # The ideal step has error 0, its opposite 1; a constant P = 1/2 has 1/2.
    assert 0 < p.error < 0.5


def test_describe_is_a_readable_table() -> None:
    p = plan(0.8)
    text = p.describe()
    assert str(p) == text
    assert f"k = {p.k} features" in text and f"s = {p.s}" in text and f"r = {p.r}" in text
    assert f"t = k*s = {p.t}" in text and f"{p.bytes_per_doc} bytes" in text
    assert "<- threshold" in text
    assert len(text.splitlines()) >= 15


@pytest.mark.parametrize(
    ("threshold", "row"), [(1e-9, "1e-09"), (0.8125, "0.8125"), (0.8, "0.800")]
)
def test_the_threshold_row_of_the_table_shows_the_threshold(threshold: float, row: str) -> None:
    (marked,) = [x for x in plan(threshold).describe().splitlines() if x.endswith("<- threshold")]
    assert marked.split()[0] == row


def test_plot_curve_writes_a_png(tmp_path: Path) -> None:

    # moved to plots.py; the old names still resolve
    out = plot_curve(plan(0.8, max_bytes=48), tmp_path / "curve.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    out2 = plot_curve(FeatureParams(6, 14, 2), tmp_path / "paper.svg", threshold=0.9)
    assert out2.read_text().lstrip().startswith("<?xml")


@pytest.mark.parametrize("kind", sorted(PICTURE_TYPES - {"pgf"}))  # pgf needs a TeX system
def test_a_curve_drawn_on_two_days_is_the_same_bytes_in_every_picture_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    import time

    import matplotlib

    salt = matplotlib.rcParams["svg.hashsalt"]
    now = time.time
    drawn = []
    for n, day in enumerate((0, 86400)):  # drawn on two days: the clock and SOURCE_DATE_EPOCH
        monkeypatch.setenv("SOURCE_DATE_EPOCH", str(day))
        monkeypatch.setattr(time, "time", lambda day=day: now() + day)
        drawn.append(plot_curve(plan(0.8), tmp_path / f"curve{n}.{kind}").read_bytes())
    monkeypatch.setattr(time, "time", now)
    assert drawn[0] == drawn[1] and len(drawn[0]) > 10_000
    assert matplotlib.rcParams["svg.hashsalt"] == salt  # the salt is set for the save only


def test_planner_rejects_bad_arguments() -> None:
    for bad in (0, 1, 1.5, -0.1, "0.8", True):
        with pytest.raises(ParamError, match="threshold"):
            plan(bad)  # type: ignore[arg-type]
    with pytest.raises(ParamError, match="max_bytes"):
        plan(0.8, max_bytes=7)
    with pytest.raises(ParamError, match="cost_fp"):
        plan(0.8, cost_fp=0)
    with pytest.raises(ParamError, match="cost_fn"):
        plan(0.8, cost_fn=float("inf"))
    with pytest.raises(ParamError, match="max_t"):
        plan(0.8, max_t=0)
    with pytest.raises(ParamError, match="max_r"):
        plan(0.8, max_r=0)
    with pytest.raises(ParamError, match="Plan or FeatureParams"):
        plot_curve((6, 14, 2), "x.png")  # type: ignore[arg-type]


def test_plan_is_frozen() -> None:
    p = plan(0.9, max_bytes=48)
    assert isinstance(p, Plan)
    with pytest.raises(AttributeError):
        p.k = 3  # type: ignore[misc]


@pytest.mark.parametrize("verify", ["hybrid", "exact", "none"])
def test_the_method_line_summary_is_the_plan_reports_summary(verify: str) -> None:
    from neardup.params import MinhashParams
    from neardup.planner import cost_model, plan_for, summary_for

    given = MinhashParams(features=FeatureParams(6, 14, 2))
    for params in [
        *(DedupParams(threshold=t, verify=verify) for t in (0.5, 0.65, 0.8, 0.9, 1.0)),  # type: ignore[arg-type]
        DedupParams(threshold=0.9, verify=verify, method=given),  # type: ignore[arg-type]
    ]:
        report = plan_for(params)
        assert summary_for(params) == report.summary()
        assert report.params == features_for(params)
        assert (report.cost_fp, report.cost_fn) == cost_model(params.resolved_verify)
    want = (1.0, 1.0) if verify == "none" else (1.0, 1000.0)
    assert cost_model(verify) == want  # type: ignore[arg-type]


@pytest.mark.parametrize("wrong", [{}, 0.8, None, "0.8"])
def test_planning_from_something_other_than_dedup_params_names_the_argument(wrong: object) -> None:
    # plan_for({}) raised AttributeError; features_for(0.8) blamed the method
    kind = type(wrong).__name__
    for call in (plan_for, features_for, sketch_for):
        with pytest.raises(ParamError, match=rf"params must be a DedupParams, got {kind}; pass"):
            call(wrong)  # type: ignore[arg-type]


@pytest.mark.parametrize("wrong", [(38, 6, 3), None, DedupParams()])
def test_evaluate_refuses_anything_but_feature_params(wrong: object) -> None:
    # AttributeError: 'tuple' object has no attribute 'k'
    kind = type(wrong).__name__
    with pytest.raises(ParamError, match=rf"params must be a FeatureParams, got {kind}; pass"):
        evaluate(wrong, 0.8)  # type: ignore[arg-type]


@pytest.mark.parametrize("rho", [["x"], "x", None, [0.5, object()]])
def test_acceptance_of_something_not_a_resemblance_names_rho(rho: object) -> None:
    # ValueError: could not convert string to float: 'x'
    for curve in (acceptance, rejection):
        with pytest.raises(ParamError, match=r"rho must be a resemblance in \[0, 1\]"):
            curve(rho, 8, 4, 2)  # type: ignore[arg-type]


def test_a_probability_near_0_or_1_is_never_printed_as_0_or_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # P(0.8) = 0.000 for features whose P(0.8) is 2.04e-10; P(0.05) = 1.000 (and "= 1") for 0.9998
    from neardup.cli import main

    assert main(["plan", "--threshold", "0.8", "--features", "10,10,10"]) == 0
    out = capsys.readouterr().out
    assert "P(0.8) = 2.04e-10\n" in out and "P(0.8) = 2.04e-10, given" in out
    assert main(["plan", "--threshold", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "P(0.05) = 0.9998\n" in out and "P(0.05) = 0.9998, planned" in out
