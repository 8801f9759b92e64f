"""Each claim the tool makes, read from the real code paths on the generated cases and scored against the truth.

Claims are read through the functions' structured results wherever they exist: a line's interval through
:func:`app.report.compute.intervals.storage_intervals` (the recorded ``ci95``, refused by
:func:`app.model.records.interval_problem` when it is no interval of its figure), its validity flags, ``compare``'s
verdicts through its ``--json`` record (:func:`app.cli.compare.compare_runs` ``out``), knees through
:func:`app.report.compute.analysis.storage_curves` and :func:`app.report.compute.support.knee_support`, operating points
through :func:`app.report.compute.analysis.best_under_bound`, supported tail percentiles through the report's tail
cells (:func:`app.report.sections.tails.tail_cells`), memory knees through
:func:`app.report.compute.analysis.memory_curves`.
The trends exist as sentences only: :func:`trend_verdict` is the one place that reads their words.

A :class:`Tally` per table row counts cases and errors; :func:`table` prints them against their targets.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from bench.claims import cases, synth
from bench.claims.cases import EFFECTS, PAIR_CONFIGS, PairConfig, case_rng

REAL, WITHIN, UNJUDGED = "real", "within noise", "not judged"
POWER_NEEDED = 0.8  # below this power to see a 10 % difference, "within noise" / "flat" must not be said
POWER_EFFECT = 0.10


@dataclass
class Tally:
    """One row of the table: how many cases the claim was scored on, how many were wrong, and the target (the
    highest error rate allowed; None: the rate is reported, no target)."""

    key: str
    claim: str
    target: str = ""
    limit: float | None = None
    cases: int = 0
    errors: int = 0

    def add(self, error: bool) -> None:
        self.cases += 1
        self.errors += bool(error)

    @property
    def rate(self) -> float | None:
        return self.errors / self.cases if self.cases else None

    @property
    def passed(self) -> bool | None:
        if self.limit is None or self.rate is None:
            return None
        return self.rate <= self.limit + 1e-12

    def allowed(self, alpha: float = 0.01) -> int:
        """The most errors ``cases`` cases may hold when the true rate is the limit, beyond chance at ``alpha``:
        the smallest k with P(Binomial(cases, limit) > k) ≤ alpha (0 for a limit of 0).  A test asserting a rate
        on a few hundred cases uses it, so a method exactly at its target does not fail one seed in two."""
        assert self.limit is not None
        p, n = self.limit, self.cases
        tail, k = 1.0, -1
        pmf = (1 - p) ** n
        while tail > alpha and k < n:
            k += 1
            tail -= pmf
            pmf = pmf * (n - k) / (k + 1) * (p / (1 - p)) if p < 1 else 0.0
        return max(k, 0)

    @property
    def holds(self) -> bool:
        """Whether the errors are within :meth:`allowed` (the quick sweep's test)."""
        return self.limit is not None and self.errors <= self.allowed()


@dataclass
class Sweep:
    """One sweep: its seed, the cases per family and configuration, and the table's rows as they fill."""

    seed: int
    stationary_runs: int  # runs of POINTS_PER_RUN points per (φ, seconds, CV)
    nonstationary_runs: int  # runs of POINTS_PER_RUN points per (kind, size)
    pairs: int  # pairs per (configuration, effect), for compare and for the trends each
    tails: int  # points per (depth, stalls)
    knees: int  # curves per configuration
    memory: int  # curves
    effects: tuple[float, ...] = EFFECTS  # the true differences of the pairs
    rows: dict[str, Tally] = field(default_factory=dict)
    seconds: float = 0.0

    def row(self, key: str, claim: str, target: str = "", limit: float | None = None) -> Tally:
        if key not in self.rows:
            self.rows[key] = Tally(key, claim, target, limit)
        return self.rows[key]


# the quick sweep (``make test``) judges pairs only at the effects its assertions need: equal and +10 %
QUICK: dict[str, Any] = dict(stationary_runs=12, nonstationary_runs=3, pairs=30, tails=2, knees=15, memory=40,
                             effects=(0.0, POWER_EFFECT))
FULL: dict[str, Any] = dict(stationary_runs=150, nonstationary_runs=30, pairs=200, tails=12, knees=200, memory=400)


@contextmanager
def scratch() -> Iterator[Path]:
    """A directory for the cases' runs, in memory where the machine has /dev/shm (every line is fsynced)."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    d = Path(tempfile.mkdtemp(prefix="claims-", dir=base))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def fresh(work: Path, name: str) -> Path:
    d = work / name
    if d.exists():
        shutil.rmtree(d)
    return d


# --- intervals of stationary and non-stationary points --------------------------------------------------------

PHIS = (0.0, 0.5, 0.9)
STATIONARY = ((30, 0.05), (60, 0.02))  # (seconds, per-second CV)
NONSTATIONARY = (("drift", 0.10), ("drift", 0.30), ("drift", -0.30), ("shift", -0.15), ("shift", 0.15),
                 ("shift", -0.30))
COVER_LIMIT = 0.07  # 95 % intervals must cover the true mean in at least 93 % of stationary cases


def flagged(row: Any, iv: tuple[float, float] | None) -> bool:
    """Whether the report warns of a point instead of giving it a plain ±: it shows no interval, or the line
    carries a validity flag, or its interval record names a drift or a level shift."""
    if iv is None or list(row.flags):
        return True
    method = json.dumps(row.metrics.ci_method or {}).lower()
    return "shift" in method or "drift" in method


def intervals(sw: Sweep, work: Path) -> None:
    from app.report.compute.intervals import storage_intervals
    from app.report.data.model import load

    pooled = sw.row("cover/stationary", "95 % interval covers the true mean (stationary, all φ)", "≥ 93 %",
                    COVER_LIMIT)
    shown = sw.row("shown/stationary", "shown figure ± half-width covers the true mean (stationary)", "≥ 93 %",
                   COVER_LIMIT)
    inside = sw.row("inside/stationary", "figure shown with ± outside its own interval (stationary)", "0 %", 0.0)
    for phi in PHIS:
        cover = sw.row(f"cover/phi={phi:g}", f"95 % interval covers the true mean, AR(1) φ = {phi:g}", "≥ 93 %",
                       COVER_LIMIT)
        none = sw.row(f"none/phi={phi:g}", f"stationary point without an interval, φ = {phi:g}")
        false_flag = sw.row(f"flag/phi={phi:g}", f"stationary point flagged, φ = {phi:g}")
        for seconds, cv in STATIONARY:
            for i in range(sw.stationary_runs):
                rng = case_rng(sw.seed, f"stationary/{phi}/{seconds}/{cv}", i)
                d = fresh(work, "stationary")
                truths = cases.stationary_run(d, rng, phi, seconds, cv)
                rows = sorted(load(d).storage, key=lambda r: r.index)
                for row, truth in zip(rows, truths):
                    iv = storage_intervals(d, row).get("iops")
                    none.add(iv is None)
                    false_flag.add(bool(list(row.flags)))
                    if iv is None:
                        continue
                    hit = iv[0] <= truth.true_mean <= iv[1]
                    cover.add(not hit)
                    pooled.add(not hit)
                    lo, hi = shown_interval(row, iv)
                    shown.add(not lo <= truth.true_mean <= hi)
                    inside.add(not iv[0] <= (lo + hi) / 2 <= iv[1])
    warmups(sw, work)
    bad = sw.row("nonstationary", "drift / level shift given a narrow ± that misses the run's mean, unflagged",
                 "≤ 2 %", 0.02)
    for kind, size in NONSTATIONARY:
        one = sw.row(f"nonstationary/{kind}{size:+g}", f"… {kind} {size * 100:+.0f} % over 30 s, CV 2 %")
        for i in range(sw.nonstationary_runs):
            rng = case_rng(sw.seed, f"nonstationary/{kind}/{size}", i)
            d = fresh(work, "nonstationary")
            truths = cases.nonstationary_run(d, rng, kind, size, 30, 0.02)
            rows = sorted(load(d).storage, key=lambda r: r.index)
            for row, truth in zip(rows, truths):
                iv = storage_intervals(d, row).get("iops")
                wrong = not flagged(row, iv) and iv is not None and not iv[0] <= truth.true_mean <= iv[1]
                one.add(wrong)
                bad.add(wrong)


WARMUP_RAMPS = (3, 5, 10)  # seconds over which a point climbs from half its level to it
WARMUP_PHIS = (0.0, 0.5)


def warmups(sw: Sweep, work: Path) -> None:
    """Points with a real warm-up (a ramp from half the level): the warm-up must be cut, and the interval (where
    there is one) must cover the settled level."""
    from app.report.compute.intervals import storage_intervals
    from app.report.data.model import load

    cover = sw.row("warmup/cover", "95 % interval misses the settled mean after a warm-up ramp (3–10 s, φ 0/0.5)",
                   "≤ 7 %", COVER_LIMIT)
    none = sw.row("warmup/none", "point with a warm-up ramp without an interval")
    for phi in WARMUP_PHIS:
        for ramp in WARMUP_RAMPS:
            kept = sw.row(f"warmup/uncut/{ramp}/phi={phi:g}", f"… ramp of {ramp} s not cut (φ {phi:g}, 30 s, CV 5 %)")
            for i in range(max(1, sw.stationary_runs // 3)):
                rng = case_rng(sw.seed, f"warmup/{phi}/{ramp}", i)
                d = fresh(work, "warmup")
                truths = cases.warmup_run(d, rng, ramp, 30, 0.05, phi)
                rows = sorted(load(d).storage, key=lambda r: r.index)
                for row, truth in zip(rows, truths):
                    method = row.metrics.ci_method or {}
                    series = method.get("series")
                    per = series.get("iops") if isinstance(series, dict) else None
                    cut = per.get("warmup") if isinstance(per, dict) else None
                    iv = storage_intervals(d, row).get("iops")
                    none.add(iv is None)
                    if isinstance(cut, (int, float)):
                        kept.add(int(cut) < ramp - 2)
                    if iv is not None:
                        cover.add(not iv[0] <= truth.true_mean <= iv[1])


def shown_interval(row: Any, iv: tuple[float, float]) -> tuple[float, float]:
    """What the report's results table prints for a point's IOPS, as [figure − half-width, figure + half-width]:
    :func:`app.report.compute.intervals.shown` where the report has it (every figure printed with ± comes from there),
    else, as before it, the line's own figure ± the interval's half-width (``pm_count(p.iops, half)``)."""
    from app.report.compute import intervals as ci

    shown = getattr(ci, "shown", None)
    if shown is not None:
        value, half = shown(row.iops, iv)
    else:
        value, half = row.iops, (iv[1] - iv[0]) / 2
    return value - half, value + half


# --- verdicts on two measurements: compare, the trends ----------------------------------------------------------


def compare_verdict(record: dict[str, Any] | None) -> str:
    """``compare --json``'s verdict of one difference as real / within noise / not judged (a difference without
    an interval, or one the tool declines to judge, is not judged)."""
    v = str((record or {}).get("verdict") or "").lower()
    if "not judged" in v or "no interval" in v or not v:
        return UNJUDGED
    if v.startswith("real"):
        return REAL
    if "within" in v or "no difference" in v or "flat" in v:
        return WITHIN
    return UNJUDGED


def trend_verdict(sentence: str) -> str:
    """The queue-depth trend's judgement of its two loads, from its sentence (the only place that reads words):
    a rise or a fall is a difference called real, "no difference"/"flat within noise" one within noise."""
    s = sentence.lower()
    if "not judged" in s:
        return UNJUDGED
    if "rises" in s or "falls" in s:
        return REAL
    if "no difference" in s or "flat within noise" in s or "within noise" in s:
        return WITHIN
    raise ValueError(f"a queue-depth trend the harness cannot read: {sentence!r}")


def _compare_case(work: Path, rng: Any, cfg: PairConfig, effect: float) -> str:
    from app.cli.compare import compare_runs

    a, b = fresh(work, "a"), fresh(work, "b")
    cases.compare_pair(a, b, rng, cfg, effect)
    out: dict[str, object] = {}
    compare_runs(str(a), str(b), out)
    storage = out.get("storage")
    records = storage.get("differences", []) if isinstance(storage, dict) else []
    rec = next((r for r in records if isinstance(r, dict) and r.get("figure") == "IOPS"), None)
    if rec is None:  # the two runs measured one point under one set of conditions: compare must pair them
        raise ValueError(f"compare --json of {a} and {b} has no IOPS difference: {str(out)[:300]}")
    return compare_verdict(rec)


def _trend_case(work: Path, rng: Any, cfg: PairConfig, effect: float) -> str:
    from app.report.data.model import load
    from app.report.sections.trends import summary_section

    d = fresh(work, "trend")
    cases.trend_pair(d, rng, cfg, effect)
    lines = [ln for ln in summary_section(d, load(d).storage) if ln.startswith("- **Queue depth**")]
    if len(lines) != 1:
        raise ValueError(f"the trends of {d} have {len(lines)} queue-depth sentences, not 1")
    return trend_verdict(lines[0])


def pairs(sw: Sweep, work: Path, what: str, judge: Callable[[Path, Any, PairConfig, float], str]) -> None:
    """``what`` ("compare" or "trend"): every configuration at every effect; then the rates."""
    verdicts: dict[tuple[str, float], list[str]] = {}
    for cfg in PAIR_CONFIGS:
        for effect in sw.effects:
            got = verdicts.setdefault((cfg.name, effect), [])
            for i in range(sw.pairs):
                got.append(judge(work, case_rng(sw.seed, f"{what}/{cfg.name}/{effect}", i), cfg, effect))
    name = "compare" if what == "compare" else "QD trend"
    said = "within noise" if what == "compare" else "no difference / flat"
    low = sw.row(f"{what}/flat-low-power", f"{name}: \"{said}\" where power for 10 % < 80 %", "0 %", 0.0)
    for cfg in PAIR_CONFIGS:
        power = verdicts[(cfg.name, POWER_EFFECT)].count(REAL) / max(len(verdicts[(cfg.name, POWER_EFFECT)]), 1)
        false_real = sw.row(f"{what}/real-equal/{cfg.name}", f"{name}: \"real\" when equal — {cfg.name}", "≤ 5 %",
                            0.05)
        for v in verdicts[(cfg.name, 0.0)]:
            false_real.add(v == REAL)
        sw.row(f"{what}/power/{cfg.name}", f"{name}: not \"real\" at +10 % (1 − power) — {cfg.name}")
        for v in verdicts[(cfg.name, POWER_EFFECT)]:
            sw.rows[f"{what}/power/{cfg.name}"].add(v != REAL)
        for effect in sw.effects[1:]:
            t = sw.row(f"{what}/within/{cfg.name}/{effect:g}",
                       f"{name}: \"{said}\" at +{effect * 100:.0f} % — {cfg.name}")
            for v in verdicts[(cfg.name, effect)]:
                t.add(v == WITHIN)
        if power < POWER_NEEDED:
            for effect in sw.effects:
                for v in verdicts[(cfg.name, effect)]:
                    low.add(v == WITHIN)


# --- tails -----------------------------------------------------------------------------------------------------

TAIL_DEPTHS = (32, 128, 256)
TAIL_STALLS = (0, 1, 3)
TAIL_IOS = 1_200_000
SUPPORT_EVENTS = 10  # a percentile is supported when at least ten distinct events lie at or beyond it


def tails(sw: Sweep, work: Path) -> None:
    from app.model.tails import TAIL_PERCENTILES
    from app.report.data.model import load
    from app.report.sections.tails import UNSUPPORTED, tail_cells

    stalled = sw.row("tails/stall", "tail percentile stated supported, set by < 10 stall events", "0 %", 0.0)
    clean = sw.row("tails/clean", "supported tail percentile shown as unsupported (no stalls)")
    for depth in TAIL_DEPTHS:
        for stalls in TAIL_STALLS:
            for i in range(sw.tails):
                rng = case_rng(sw.seed, f"tails/{depth}/{stalls}", i)
                d = fresh(work, "tails")
                truth = cases.tail_run(d, rng, depth, stalls, TAIL_IOS)
                (row,) = load(d).storage
                for (key, _pct, _label), cell in zip(TAIL_PERCENTILES, tail_cells(row)):
                    events = truth.events_beyond.get(key)
                    if events is None:
                        continue
                    if events < SUPPORT_EVENTS:
                        stalled.add(cell != UNSUPPORTED)
                    elif stalls == 0:
                        clean.add(cell == UNSUPPORTED)


# --- knees and operating points ---------------------------------------------------------------------------------

# (replicates, level drift between runs, p99 spread between runs (log σ), seconds, per-second CV, label)
KNEE_CONFIGS = ((1, 0.0, 0.0, 10, 0.03, "1 run"), (1, 0.0, 0.0, 5, 0.15, "1 run, 5 s, CV 15 %"),
                (3, 0.05, 0.35, 10, 0.03, "3 replicates, runs drift 5 %, p99 σ 0.35"))


def knees(sw: Sweep, work: Path) -> None:
    from app.report.compute import analysis as an
    from app.report.compute.support import knee_support
    from app.report.data.model import load
    from app.report.sections.procedure import storage_views

    for reps, between, p99_between, seconds, cv, label in KNEE_CONFIGS:
        miss = sw.row(f"knee/miss/{label}", f"knee not at the true knee — {label}")
        off = sw.row(f"knee/off/{label}", f"knee more than one QD step from the true knee — {label}")
        stable = sw.row(f"knee/stable-off/{label}", f"knee rated stable, more than one step off — {label}",
                        "≤ 5 %", 0.05)
        op = sw.row(f"op/violates/{label}", f"operating point whose true p99 breaks the bound — {label}", "≤ 5 %",
                    0.05)
        for i in range(sw.knees):
            rng = case_rng(sw.seed, f"knee/{label}", i)
            d = fresh(work, "knee")
            truth = cases.knee_run(d, rng, reps, between, cv, seconds, p99_between)
            data = load(d)
            curves = an.storage_curves(storage_views(data.storage).main)
            if len(curves) == 1 and truth.knee is not None:
                c = curves[0]
                if c.knee is not None:
                    got = c.points[c.knee].inflight
                    true = cases.LOADS[truth.knee]
                    wrong = abs(math.log2(got) - math.log2(true)) > 1
                    miss.add(got != true)
                    off.add(wrong)
                    stable.add(wrong and knee_support(d, c).verdict == "stable")
            for choice in an.best_under_bound(data.storage, truth.bound_ns):
                if choice.best is not None:
                    op.add(truth.p99_true[choice.best.inflight] > truth.bound_ns)


# --- memory rows of a busy machine -------------------------------------------------------------------------------


def memory(sw: Sweep, work: Path) -> None:

    wrong = sw.row("memory/knee-contended", "memory knee moved by contended rows (≠ the uncontended rows' knee)",
                   "0 %", 0.0)
    peak_row = sw.row("memory/peak-contended", "memory curve's peak bandwidth from a contended row", "0 %", 0.0)
    for i in range(sw.memory):
        rng = case_rng(sw.seed, "memory", i)
        contended = frozenset(rng.sample(cases.DELAYS[3:], rng.randint(1, 3)))
        clean, measured = cases.memory_curve(rng, contended)
        # the truth: the same analysis on the rows that ran on a quiet machine, the contended ones left out
        truth = _memory_knee(work, [s for s in clean if s.delay not in contended])
        got = _memory_knee(work, measured)
        if got is not None and got[0] is not None:  # a knee stated (no knee, or not judged, claims none)
            wrong.add(got[0] != (truth[0] if truth is not None else None))
            if got[1] is not None:
                peak_row.add(got[1] in contended)


def _memory_knee(work: Path, specs: list[Any]) -> tuple[int | None, int | None] | None:
    """The knee's delay (None: no knee) and the highest-bandwidth row's delay of the run of these rows; None when
    the analysis finds no curve."""
    from app.report.compute import analysis as an
    from app.report.data.model import load

    d = fresh(work, "memory")
    synth.write_memory_run(d, specs)
    curves = an.memory_curves(load(d).memory)
    if len(curves) != 1:
        return None
    c = curves[0]
    # the curve's peak as the analysis takes it: among its clean rows (a contended row is shown, never a peak)
    top = max(c.clean, key=lambda p: p.bandwidth or 0.0) if c.clean else None
    return (None if c.knee is None else c.points[c.knee].delay, None if top is None else top.delay)


# --- the sweep and its table -------------------------------------------------------------------------------------

FAMILIES: tuple[tuple[str, Callable[[Sweep, Path], None]], ...] = (
    ("intervals", intervals),
    ("compare", lambda sw, w: pairs(sw, w, "compare", _compare_case)),
    ("trends", lambda sw, w: pairs(sw, w, "trend", _trend_case)),
    ("tails", tails),
    ("knees", knees),
    ("memory", memory),
)


def sweep(seed: int, sizes: dict[str, Any], only: tuple[str, ...] = ()) -> Sweep:
    sw = Sweep(seed, **sizes)
    t0 = time.monotonic()
    with scratch() as work:
        for name, family in FAMILIES:
            if not only or name in only:
                family(sw, work)
    sw.seconds = time.monotonic() - t0
    return sw


def table(sw: Sweep) -> str:
    """The table as text: claim, cases, error rate (for coverage rows: 1 − coverage), target, pass/fail."""
    head = ("Claim", "Cases", "Error rate", "Target", "")
    rows = []
    for t in sw.rows.values():
        rate = "—" if t.rate is None else f"{t.rate * 100:.1f} %"
        verdict = {True: "pass", False: "FAIL", None: ""}[t.passed]
        rows.append((t.claim, str(t.cases), rate, _target(t), verdict))
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += ["| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            + " |" for r in rows]
    return "\n".join(out)


def _target(t: Tally) -> str:
    if t.limit is None:
        return ""
    if t.key.startswith(("cover/", "shown/")):
        return f"≤ {t.limit * 100:.0f} % miss"
    return f"≤ {t.limit * 100:g} %"
