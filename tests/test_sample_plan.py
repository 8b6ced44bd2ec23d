"""plan --sample: measured resemblances equal brute force, forecasts equal their definitions,
sub-samples estimate the corpus without bias, and the result does not depend on batching."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from neardup.cli import main
from neardup.errors import ParamError
from neardup.features import FeatureParams, acceptance
from neardup.params import DedupParams, MinhashParams, ShingleParams
from neardup.sample_plan import estimate_from_sample, plan_with_sample
from neardup.shingles import shingle_batch
from neardup.testing.synth import near_duplicate_corpus, random_documents
from neardup.testing.truth import exact_similar_pairs


def _texts(n: int = 500) -> list[str]:
    base = random_documents(n // 2, seed=41, words=(60, 200))
    return near_duplicate_corpus(base, n, 0.5, seed=42).texts


def _batches(texts: list[str], size: int = 97):
    def run() -> Iterator[tuple[list[str], np.ndarray]]:
        for lo in range(0, len(texts), size):
            yield texts[lo : lo + size], np.arange(lo, min(lo + size, len(texts)), dtype=np.int64)

    return run


def test_full_sample_measures_every_pair_above_the_floor_exactly() -> None:
    texts = _texts()
    est = estimate_from_sample(_batches(texts), n=10_000, threshold=0.8, floor=0.4)
    assert est.sample_docs == est.corpus_docs == len(texts) and est.scale == 1.0
    _, _, truth = exact_similar_pairs(shingle_batch(texts, ShingleParams()), threshold=0.4)
    assert len(truth) > 100
    assert np.allclose(est.rho, np.sort(truth))
    assert est.below_floor == len(texts) * (len(texts) - 1) // 2 - len(truth)


def test_forecast_equals_the_definitions_on_measured_pairs() -> None:
    texts = _texts()
    est = estimate_from_sample(_batches(texts), n=10_000, threshold=0.8, floor=0.4)
    f = est.forecast(FeatureParams(6, 14, 2), 0.8)
    p = acceptance(est.rho, 6, 14, 2)
    high = est.rho >= 0.8
    assert f.near_duplicate_pairs == high.sum()
    assert f.misses == pytest.approx((1 - p[high]).sum())
    assert f.false_candidates == pytest.approx(p[~high].sum())
    assert f.recall == pytest.approx(1 - f.misses / f.near_duplicate_pairs)


def test_sub_samples_estimate_the_corpus_counts() -> None:
    texts = _texts()
    full = estimate_from_sample(_batches(texts), n=10_000, threshold=0.8).forecast(
        FeatureParams(6, 14, 2), 0.8
    )
    estimates = [
        estimate_from_sample(_batches(texts), n=150, threshold=0.8, seed=s)
        .forecast(FeatureParams(6, 14, 2), 0.8)
        .near_duplicate_pairs
        for s in range(1, 9)
    ]
    assert abs(np.mean(estimates) - full.near_duplicate_pairs) < 0.15 * full.near_duplicate_pairs


def test_batching_changes_nothing() -> None:
    texts = _texts(300)
    a = estimate_from_sample(_batches(texts, 7), n=60, threshold=0.7, seed=3)
    b = estimate_from_sample(_batches(texts, 5000), n=60, threshold=0.7, seed=3)
    assert np.array_equal(a.rho, b.rho) and a.below_floor == b.below_floor


def test_floor_below_the_search_range_is_rejected() -> None:
    with pytest.raises(ParamError, match="floor"):
        estimate_from_sample(_batches(_texts(20)), n=5, floor=0.01)


def test_cli_plan_sample_prints_histogram_and_forecasts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in _texts(300)))
    plot = tmp_path / "p.png"
    assert (
        main(
            [
                "plan",
                "--sample",
                str(src),
                "--threshold",
                "0.8",
                "--sample-size",
                "100",
                "--plot",
                str(plot),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "1 (identical)" in out and "planned (equal costs)" in out and "neardup dedup's plan" in out
    )
    assert "recall" in out and plot.read_bytes()[:4] == b"\x89PNG"
    given = DedupParams(threshold=0.8, method=MinhashParams(features=FeatureParams(6, 14, 2)))
    _, forecasts = plan_with_sample(_batches(_texts(300)), given, n=100)
    assert forecasts[0].label == "given features" and forecasts[0].params == FeatureParams(6, 14, 2)
    assert main(["plan", "--sample", str(src)]) == 1


def test_the_dedup_forecast_uses_the_features_dedup_plans_for_its_verification() -> None:
    from neardup.planner import features_for

    for verify in (None, "none"):
        params = DedupParams(threshold=0.8, verify=verify)  # type: ignore[arg-type]
        _, forecasts = plan_with_sample(_batches(_texts(60)), params, n=20)
        assert forecasts[-1].label == "neardup dedup's plan"
        assert forecasts[-1].params == features_for(params)
    assert forecasts[-1].params == FeatureParams(25, 10, 3)  # unverified: equal costs


def test_a_negative_seed_is_refused_before_the_corpus_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def unread() -> Iterator[tuple[list[str], np.ndarray]]:
        raise AssertionError("the corpus was read")

    with pytest.raises(ParamError, match=r"seed must be an integer from 0 to 2\*\*63-1"):
        estimate_from_sample(unread, n=5, seed=-3)
    src = tmp_path / "two.jsonl"
    src.write_text('{"text": "a b c"}\n{"text": "a b d"}\n')
    assert main(["plan", "--threshold", "0.8", "--sample", str(src), "--seed", "-3"]) == 1
    err = capsys.readouterr().err
    assert "seed must be an integer from 0 to 2**63-1, got -3" in err and len(err.splitlines()) == 1


def test_a_floor_above_the_threshold_is_refused_and_the_default_never_lies_above_it() -> None:
    texts = _texts(60)
    with pytest.raises(ParamError, match=r"floor 0\.9 lies above the threshold 0\.8"):
        estimate_from_sample(_batches(texts), n=20, threshold=0.8, floor=0.9)
    assert estimate_from_sample(_batches(texts), n=20, threshold=0.2).floor == 0.2
    assert estimate_from_sample(_batches(texts), n=20, threshold=0.8, floor=0.8).floor == 0.8
    with pytest.raises(ParamError, match=r"threshold of 0\.1 or more"):
        estimate_from_sample(_batches(texts), n=20, threshold=0.05)


def test_the_sample_forecasts_the_plan_dedup_and_plan_use_with_the_same_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from neardup.planner import features_for, plan_as_dedup

    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in _texts(60)))
    base = ["plan", "--threshold", "0.8", "--sample", str(src), "--sample-size", "20"]

    def forecasts(*options: str) -> str:
        assert main([*base, *options]) == 0
        return capsys.readouterr().out

    out = forecasts("--super-features")
    dedup = features_for(DedupParams(threshold=0.8, method=MinhashParams(super_features=True)))
    assert f"neardup dedup's plan: k = {dedup.k}, s = {dedup.s}, r = {dedup.r}" in out
    out = forecasts("--fn-cost", "5", "--budget", "64")
    asked, _ = plan_as_dedup(DedupParams(threshold=0.8), cost_fn=5.0, max_bytes=64)
    f = asked.params
    assert f"planned with fn-cost 5, fp-cost 1, budget 64 bytes: k = {f.k}, s = {f.s}" in out
    for refused in (["--method", "simhash"], ["--max-distance", "3"]):
        assert main([*base, *refused]) == 1
        assert "--sample forecasts MinHash features" in capsys.readouterr().err
    assert main([*base, "--features", "6,14,2", "--budget", "64"]) == 1
    assert "--budget" in capsys.readouterr().err


def test_a_sample_read_with_on_error_skip_says_what_it_skipped_and_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "c.jsonl"
    lines = [json.dumps({"text": t}) for t in _texts(40)]
    lines[3], lines[7] = "{not json", json.dumps({"body": "no text field"})
    src.write_text("\n".join(lines) + "\n")
    args = ["plan", "--threshold", "0.8", "--sample", str(src), "--sample-size", "10"]
    assert main([*args, "--on-error", "skip"]) == 0
    out, err = capsys.readouterr()
    assert "compared with all 38" in out
    assert "skipped 2 problems (bad_json 1, missing_text 1); first: " in err
    assert f"{src} line 4: not valid JSON" in err
