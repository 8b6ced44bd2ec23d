"""Plans and samples -> pictures: the acceptance curve P(ρ) of a plan (``neardup plan --plot``)
and a sample's resemblance histogram under the plans' curves (``plan --sample --plot``).

matplotlib is optional (``neardup[plot]``) and imported only here, when a picture is drawn; the
Agg canvas is used directly, so no global pyplot state or backend is touched.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import NeardupError, ParamError
from .features import acceptance, rejection
from .io import atomic_write
from .io._targets import stdout_identity
from .params import FeatureParams
from .planner import Plan, check_threshold

if TYPE_CHECKING:  # annotations only: plan without --sample need not load the sampler
    from .sample_plan import Forecast, SampleEstimate


def _figure(size: tuple[float, float]) -> Any:
    """A matplotlib Figure on an Agg canvas; NeardupError naming the extra when it is missing."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise NeardupError(
            "plotting needs matplotlib; install it with: pip install 'neardup[plot]'"
        ) from exc
    fig = Figure(figsize=size)
    FigureCanvasAgg(fig)
    return fig


def plot_curve(
    plan_or_params: Plan | FeatureParams, path: str | Path, *, threshold: float | None = None
) -> Path:
    """Draw P(ρ) on a linear scale (left) and P and 1 - P on a log scale (right) into `path`.

    The file type follows the suffix (.png, .svg, .pdf). Needs matplotlib (``neardup[plot]``);
    uses the Agg canvas directly, so no global pyplot state or backend is touched.
    """
    if isinstance(plan_or_params, Plan):
        params = plan_or_params.params
        rho0: float | None = plan_or_params.threshold if threshold is None else threshold
    elif isinstance(plan_or_params, FeatureParams):
        params, rho0 = plan_or_params, threshold
    else:
        raise ParamError(f"plot_curve needs a Plan or FeatureParams, got {type(plan_or_params)}")
    if rho0 is not None:
        rho0 = check_threshold(rho0)
    k, s, r = params.k, params.s, params.r
    rho = np.linspace(0.0, 1.0, 1001)
    p = acceptance(rho, k, s, r)
    miss = rejection(rho, k, s, r)
    fig = _figure((10, 4.2))
    left, right = fig.subplots(1, 2)
    title = f"k={k}, s={s}, r={r} (t={params.t}, {params.bytes_per_doc} bytes/doc)"
    left.plot(rho, p, color="C0", label="P(candidate)")
    left.axhline(0.5, color="0.7", lw=0.8, ls=":")
    left.set(xlabel="resemblance ρ", ylabel="probability", title="acceptance curve", xlim=(0, 1))
    right.semilogy(rho[1:], p[1:], color="C0", label="P(candidate)")
    right.semilogy(rho[:-1], miss[:-1], color="C3", label="1 - P (missed)")
    right.set(xlabel="resemblance ρ", title="log scale", xlim=(0, 1), ylim=(1e-12, 1.5))
    if rho0 is not None:
        for ax in (left, right):
            ax.axvline(rho0, color="k", lw=0.8, ls="--", label=f"threshold {rho0:g}")
    left.legend(loc="upper left")
    right.legend(loc="lower right")
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path)


#: Picture types a figure is saved as (matplotlib's Agg canvas), told by the name's suffix.
PICTURE_TYPES = frozenset(
    {"avif", "eps", "gif", "jpeg", "jpg", "pdf", "pgf", "png", "ps", "raw", "rgba", "svg"}
    | {"svgz", "tif", "tiff", "webp"}
)


def check_picture(path: str | Path) -> None:
    """ParamError for a picture name whose suffix names no picture type, before any work (and
    without loading matplotlib); "-" too, and any name of standard output (/dev/stdout, a
    file stdout is redirected to): the printed report goes to standard output."""
    if str(path) == "-" or _is_stdout(path):
        raise ParamError(
            f"cannot draw to {path}: the plan's text goes to standard output and the picture "
            "would be mixed into it; name a .png, .svg or .pdf file (--plot)"
        )
    out = Path(path)
    kind = out.suffix.lstrip(".").lower() or "png"
    if kind not in PICTURE_TYPES:
        raise ParamError(
            f"cannot draw {out}: unknown picture type '.{kind}'; name a .png, .svg or .pdf file"
        )
    if kind == "pgf":
        _check_tex(out)


def _check_tex(out: Path) -> None:
    """ParamError when the TeX system matplotlib typesets a .pgf picture with is not installed
    (it would fail after the plan is printed, with its own traceback)."""
    try:
        import matplotlib
    except ImportError:  # drawing says what to install
        return
    tex = str(matplotlib.rcParams["pgf.texsystem"])
    if shutil.which(tex) is None:
        raise ParamError(
            f"cannot draw {out}: a .pgf picture is typeset by {tex}, which is not installed "
            "(not on PATH); install a TeX system, or name a .png, .svg or .pdf file"
        )


#: Metadata that would make two drawings of one figure differ (the date of the drawing), left
#: out; each backend names it its own way. PostScript's date cannot be left out this way (only
#: the SOURCE_DATE_EPOCH environment variable fixes it): `_undated` drops its line instead, and
#: writes svgz's gzip header without the time.
_UNDATED: dict[str, dict[str, None]] = {
    "svg": {"Date": None},
    "svgz": {"Date": None},
    "pdf": {"CreationDate": None},
}


def _undated(kind: str, data: bytes) -> bytes:
    """The drawn bytes without the time of the drawing: PostScript's (.ps, .eps)
    ``%%CreationDate`` comment dropped; .svgz compressed here, its gzip header's time 0."""
    if kind in ("ps", "eps"):
        return re.sub(rb"^%%CreationDate:[^\n]*\n", b"", data, count=1, flags=re.MULTILINE)
    if kind == "svgz":
        return gzip.compress(data, mtime=0)
    return data


def _is_stdout(path: str | Path) -> bool:
    """Whether ``path`` names the file standard output writes to."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == stdout_identity()


def save_figure(fig: Any, path: str | Path) -> Path:
    """Write a matplotlib figure whose type follows the suffix (.png, .svg, .pdf), atomically:
    complete or absent, never a half-drawn file. The same figure gives the same bytes in every
    type: no date is written and SVG's element ids come from a fixed salt, not a random one."""
    from matplotlib import rc_context

    out = Path(path)
    check_picture(out)
    kind = out.suffix.lstrip(".").lower() or "png"
    extra = {"metadata": _UNDATED[kind]} if kind in _UNDATED else {}
    drawn = io.BytesIO()
    with rc_context({"svg.hashsalt": "neardup"}):  # svgz: drawn as svg, compressed by _undated
        fig.savefig(drawn, dpi=110, format="svg" if kind == "svgz" else kind, **extra)
    with atomic_write(out, "wb") as handle:
        handle.write(_undated(kind, drawn.getvalue()))
    return out


def plot_sample(est: SampleEstimate, forecasts: list[Forecast], path: str | Path) -> Path:
    """Estimated corpus pairs per resemblance bin (bars, log scale) under the plans' P(ρ)."""
    fig = _figure((8, 4.2))
    ax = fig.subplots()
    *hist, (_, _, identical) = est.histogram()
    lows = [lo for lo, _, _ in hist]
    widths = [hi - lo for lo, hi, _ in hist]
    values = [c * est.scale for _, _, c in hist]
    ax.bar(lows, values, width=widths, align="edge", color="#9db4d0", label="pairs (estimated)")
    ax.bar([1.0], [identical * est.scale], width=0.012, color="#4d6f99", label="identical sets")
    if any(values) or identical:
        ax.set_yscale("log")
    ax.legend(loc="upper center", fontsize=8)
    ax.set(xlabel="resemblance ρ", ylabel="pairs in the corpus (estimated)", xlim=(0, 1.02))
    curve = ax.twinx()
    rho = np.linspace(0, 1, 501)
    for i, f in enumerate(forecasts):
        p = f.params
        curve.plot(rho, acceptance(rho, p.k, p.s, p.r), color=f"C{i + 1}", label=f"P(ρ), {f.label}")
    curve.axvline(forecasts[0].threshold, color="k", ls="--", lw=0.8)
    curve.set(ylabel="P(candidate)", ylim=(0, 1.02))
    curve.legend(loc="upper left", fontsize=8)
    fig.suptitle(f"resemblance among sampled pairs (≥ {est.floor:g}) and the filter")
    fig.tight_layout()
    return save_figure(fig, path)
